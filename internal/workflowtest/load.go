package workflowtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/engine"
)

// Suite is a loaded configuration and its test cases.
type Suite struct {
	// Files are the files loaded: those given and their companions (WithCompanions).
	Files []string
	Cases []config.TestConfig
	// Warnings are the configuration's non-fatal findings.
	Warnings config.Errors

	cfg  *config.Config
	opts app.Options
}

// Load reads files and their companions, builds the configuration once to check it
// and checks every case: the workflow it names exists and its mocks name schemes
// Helix has. All problems come back together as config.Errors, sorted by position.
// The suite is nil when there are errors.
func Load(opts app.Options, files ...string) (*Suite, error) {
	files = WithCompanions(files)
	cfg, err := config.Load(files...)
	var errs config.Errors
	if err != nil {
		var ce config.Errors
		if !errors.As(err, &ce) {
			return nil, err
		}
		errs = append(errs, ce...)
	}
	if cfg == nil {
		return nil, errs.Err()
	}
	warnings := cfg.Warnings
	a, err := app.Build(cfg, opts)
	if err != nil {
		errs = append(errs, config.AsErrors(err, config.Pos{}, "")...)
	} else {
		errs = append(errs, checkCases(cfg.Tests, a.Context())...)
	}
	s := &Suite{Files: files, Cases: cfg.Tests, Warnings: cfg.Warnings, cfg: cfg, opts: opts}
	cfg.Warnings = warnings // each case's build adds the build's warnings again
	if len(errs) == 0 && len(cfg.Tests) == 0 {
		errs = append(errs, &config.Error{Pos: config.Pos{File: strings.Join(files, ", ")},
			Msg:  "no tests in " + strings.Join(files, ", "),
			Hint: "add a tests: list to the file, or write the cases in a NAME_test.yaml beside it (see docs/testing.md)"})
	}
	if len(errs) > 0 {
		return s, errs.Sorted()
	}
	return s, nil
}

// WithCompanions adds to files the companion of each: NAME_test.yaml for NAME.yaml,
// and NAME.yaml for NAME_test.yaml (.yml alike), when it exists and is not listed.
// The configuration comes before its tests.
// A file given twice is loaded once.
func WithCompanions(files []string) []string {
	var out []string
	for _, f := range files {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	for _, f := range slices.Clone(out) {
		ext := filepath.Ext(f)
		if ext != ".yaml" && ext != ".yml" {
			continue
		}
		base := strings.TrimSuffix(f, ext)
		if name, isTest := strings.CutSuffix(base, "_test"); isTest {
			if c := name + ext; exists(c) && !slices.Contains(out, c) {
				out = slices.Insert(out, slices.Index(out, f), c)
			}
		} else if c := base + "_test" + ext; exists(c) && !slices.Contains(out, c) {
			out = slices.Insert(out, slices.Index(out, f)+1, c)
		}
	}
	return out
}

func exists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// checkCases reports cases that name no workflow or tool, and mocks whose scheme
// no component serves.
func checkCases(cases []config.TestConfig, hc *engine.Context) config.Errors {
	var ids []string
	for _, w := range hc.Workflows() {
		ids = append(ids, w.ID)
	}
	schemes := hc.Schemes()
	var errs config.Errors
	for _, tc := range cases {
		if !slices.Contains(ids, tc.Workflow) {
			e := &config.Error{Pos: tc.WorkflowPos, Path: config.KeyPath(tc.Path, "workflow"),
				Msg: fmt.Sprintf("no workflow or tool %q", tc.Workflow)}
			switch e.Hint = config.DidYouMean(tc.Workflow, ids); {
			case e.Hint != "":
			case len(ids) == 0:
				e.Hint = "the files declare no workflow or tool: give helix test the file that declares it too"
			default:
				e.Hint = "the ids are: " + strings.Join(ids, ", ")
			}
			errs = append(errs, e)
		}
		for _, m := range tc.Mocks {
			if !slices.Contains(schemes, m.Parsed.Scheme) {
				e := &config.Error{Pos: m.URIPos, Path: config.KeyPath(m.Path, "uri"),
					Msg: fmt.Sprintf("no component for scheme %q", m.Parsed.Scheme)}
				if e.Hint = config.DidYouMean(m.Parsed.Scheme, schemes); e.Hint == "" {
					e.Hint = "mock a target URI of the workflow; the schemes are: " + strings.Join(schemes, ", ")
				}
				errs = append(errs, e)
			}
		}
	}
	return errs
}
