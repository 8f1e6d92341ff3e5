package step

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/pkg/component"
)

// ScriptPos returns where the text of scalar n starts in file: its first content
// line for block scalars (config moves block scalars there at load), one column past
// the quote for quoted scalars.
func ScriptPos(file string, n *yaml.Node) config.Pos {
	p := config.Pos{File: file, Line: n.Line, Col: n.Column}
	if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
		p.Col++
	}
	return p
}

// CompileScript compiles the Starlang script held by scalar n (the value of a
// `starlang:` key) with positions mapped onto the YAML file and bc's Starlang
// options. A compile error is recorded in d at the exact line and column of the
// script; the result is then nil. The names the script reads without defining them
// are checked against the enrich steps once every workflow is built (see
// BuildContext.Errors).
func CompileScript(bc *BuildContext, d *config.Decoder, n *yaml.Node, path string) *starlang.Script {
	src := d.String(n, path)
	if n == nil || n.Kind != yaml.ScalarNode {
		return nil
	}
	if strings.TrimSpace(src) == "" {
		d.Errorf(n, path, "empty Starlang script")
		return nil
	}
	pos := ScriptPos(d.File(), n)
	s, err := starlang.Compile(pos.File, pos.Line, pos.Col, src, bc.Starlang)
	if err != nil {
		e := scriptError(err, pos, path)
		if n.Style&yaml.FoldedStyle != 0 && e.Hint == "" {
			// Folding joined the script's lines: the error may only be that.
			e.Hint = "starlang: > joins the script's lines into one; write starlang: | to keep them"
		}
		d.Add(e)
		return nil
	}
	bc.checkNames(s, pos, path)
	return s
}

// nameCheck is a script whose free names are checked when the build is complete.
type nameCheck struct {
	script   *starlang.Script
	pos      config.Pos
	path     string
	defined  map[string]bool // variables set by enrich steps before the script
	external bool            // the workflow may run on an exchange from elsewhere (direct://)
}

// checkNames schedules the check of the names s reads: each must be set by an
// enrich step before it in the workflow or, when the workflow can be handed another
// workflow's exchange, by an enrich step anywhere.
func (bc *BuildContext) checkNames(s *starlang.Script, pos config.Pos, path string) {
	if len(s.Reads()) == 0 {
		return
	}
	defined := make(map[string]bool, len(bc.vars))
	for k := range bc.vars {
		defined[k] = true
	}
	// A trigger whose module says its exchanges start fresh (they come from outside
	// Helix) carries no variables; any other (direct://, tool://, none) may run the
	// workflow on an exchange that another workflow's enrich steps filled.
	bc.nameChecks = append(bc.nameChecks, nameCheck{script: s, pos: pos, path: path, defined: defined,
		external: !component.StartsFresh(bc.Trigger)})
}

// defineVariables records the variables an enrich step sets.
func (bc *BuildContext) defineVariables(s *starlang.Script) {
	if bc.vars == nil {
		bc.vars = map[string]bool{}
	}
	if bc.enrichVars == nil {
		bc.enrichVars = map[string]bool{}
	}
	for _, name := range s.Assigns() {
		bc.vars[name] = true
		bc.enrichVars[name] = true
	}
}

// finishNameChecks reports every name a script reads that no enrich step defines:
// Starlang would fail on it at every evaluation.
func (bc *BuildContext) finishNameChecks() {
	checks := bc.nameChecks
	bc.nameChecks = nil
	for _, c := range checks {
		for _, use := range c.script.Reads() {
			if c.defined[use.Name] || (c.external && bc.enrichVars[use.Name]) {
				continue
			}
			candidates := append(starlang.Predeclared(), c.script.Assigns()...)
			for k := range c.defined {
				candidates = append(candidates, k)
			}
			if c.external {
				for k := range bc.enrichVars {
					candidates = append(candidates, k)
				}
			}
			e := &config.Error{Pos: parsePos(use.Pos, c.pos), Path: c.path,
				Msg: fmt.Sprintf("starlang: undefined: %s is not a Starlang builtin, not assigned by the script, and no enrich step before this one sets a variable %q, so the script would fail at every run", use.Name, use.Name)}
			e.Hint = config.DidYouMean(use.Name, candidates)
			if e.Hint == "" {
				e.Hint = "assign it in the script, or set it in an earlier enrich step"
			}
			bc.errs = append(bc.errs, e)
		}
	}
}

// scriptError converts a starlang error ("file:line:col: msg") to a config.Error.
func scriptError(err error, fallback config.Pos, path string) *config.Error {
	var se *starlang.Error
	if errors.As(err, &se) {
		return &config.Error{Pos: parsePos(se.Pos, fallback), Path: path, Msg: "starlang: " + se.Msg}
	}
	return &config.Error{Pos: fallback, Path: path, Msg: "starlang: " + err.Error()}
}

// parsePos reads "file:line[:col]" where file is fallback.File (file names may hold
// colons, so the known file name is stripped rather than split on).
func parsePos(s string, fallback config.Pos) config.Pos {
	rest, ok := strings.CutPrefix(s, fallback.File+":")
	if !ok {
		return fallback
	}
	parts := strings.Split(rest, ":")
	line, err := strconv.Atoi(parts[0])
	if err != nil {
		return fallback
	}
	p := config.Pos{File: fallback.File, Line: line}
	if len(parts) > 1 {
		if col, err := strconv.Atoi(parts[1]); err == nil {
			p.Col = col
		}
	}
	return p
}
