package step_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	helixlog "github.com/arvenza/helix/internal/component/log"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/engine"
)

// resolvedSchema generates the file schema and resolves it for validation.
func resolvedSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	b, err := step.JSONSchema()
	if err != nil {
		t.Fatalf("JSONSchema: %v", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("the schema does not parse as a JSON Schema: %v", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve the schema: %v", err)
	}
	return rs
}

// yamlDocs reads every YAML document of a file as JSON-shaped data, the way an
// editor's YAML language server hands it to a JSON Schema validator.
func yamlDocs(t *testing.T, data []byte) []any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("parse YAML: %v", err)
		}
		docs = append(docs, jsonShape(t, v))
	}
}

// jsonShape converts decoded YAML to what encoding/json produces (string keys,
// float64 numbers).
func jsonShape(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(stringKeys(v))
	if err != nil {
		t.Fatalf("YAML value has no JSON form: %v", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func stringKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = stringKeys(x)
		}
		return v
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[fmt.Sprint(k)] = stringKeys(x)
		}
		return out
	case []any:
		for i, x := range v {
			v[i] = stringKeys(x)
		}
	}
	return v
}

// schemaFiles are the YAML files of the repository — every example, every spec
// snippet the tests load, the pattern recipes and the other files tests run — found
// by walking the module, so a new one is checked without editing this test.
// Hidden directories, bench/ (its own modules), deploy/ (Kubernetes manifests,
// checked by go test ./deploy), the conformance suite's expected-failure lists
// (not Helix configuration) and files that are wrong on purpose are skipped.
func schemaFiles(t *testing.T) []string {
	t.Helper()
	wrongOnPurpose := map[string]bool{"internal/cli/testdata/mistakes.yaml": true, "internal/cli/testdata/wftest/invalid.yaml": true}
	root := "../.."
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "bench" || rel == "deploy" || d.Name() == "node_modules" ||
				rel == "internal/cli/testdata/conformance-client") {
				return filepath.SkipDir
			}
			return nil
		}
		if (strings.HasSuffix(rel, ".yaml") || strings.HasSuffix(rel, ".yml")) && !wrongOnPurpose[rel] {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"examples/quickstart.yaml", "pkg/app/testdata/spec/s3_1_quickstart.yaml", "internal/step/testdata/patterns/routing.yaml"} {
		if !slices.Contains(files, filepath.Join(root, must)) {
			t.Fatalf("the walk missed %s (found %v)", must, files)
		}
	}
	return files
}

func TestExamplesAndSpecSnippetsValidateAgainstTheSchema(t *testing.T) {
	rs := resolvedSchema(t)
	for _, f := range schemaFiles(t) {
		t.Run(filepath.ToSlash(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, doc := range yamlDocs(t, data) {
				if err := rs.Validate(doc); err != nil {
					t.Errorf("document %d: %v", i, err)
				}
			}
		})
	}
}

func TestSchemaRejectsMistakes(t *testing.T) {
	rs := resolvedSchema(t)
	for _, tc := range []struct{ name, yaml, want string }{
		{"misspelled top-level key", "workflow:\n  - id: a\n", "workflow"},
		{"misspelled workflow key", "workflows:\n  - id: a\n    descripton: x\n", "descripton"},
		{"misspelled helix setting", "helix:\n  shutdown_timeot: 5s\n", "shutdown_timeot"},
		{"misspelled MCP server key", "helix:\n  mcp:\n    servers:\n      - addr: :3000\n        statless: true\n", "statless"},
		{"misspelled mcps key", "mcps:\n  - id: m\n    rate_limt: 5\n", "rate_limt"},
		{"unknown step kind", "workflows:\n  - id: a\n    steps:\n      - tranform: {starlang: '1'}\n", "tranform"},
		{"misspelled step key", "workflows:\n  - id: a\n    steps:\n      - log: {mesage: hi}\n", "mesage"},
		{"nested step key", "workflows:\n  - id: a\n    steps:\n      - choice:\n          when:\n            - starlang: 'True'\n              step: []\n", "step"},
		{"wrong type: list for a string", "workflows:\n  - id: [a, b]\n", "id"},
		{"wrong type: text for a duration", "helix:\n  shutdown_timeout: soon\n", "shutdown_timeout"},
		{"wrong type: text for a number", "mcps:\n  - id: m\n    rate_limit: many\n", "rate_limit"},
		{"wrong type: text for a boolean", "workflows:\n  - id: a\n    steps:\n      - multicast: {stop_on_error: maybe, steps: [{log: x}]}\n", "stop_on_error"},
		{"value outside an enum", "workflows:\n  - id: a\n    steps:\n      - multicast: {strategy: fanout, steps: [{log: x}]}\n", "strategy"},
		{"two kinds in one step", "workflows:\n  - id: a\n    steps:\n      - {log: x, transform: {starlang: '1'}}\n", ""},
		{"missing required key", "workflows:\n  - description: no id\n", "id"},
		{"unknown URI scheme", "workflows:\n  - id: a\n    steps:\n      - target: kafak://orders\n", "kafak"},
		// The three misspelled URIs of issue 11, flagged while typing.
		{"misspelled timer option", "workflows:\n  - id: a\n    trigger: timer://tick?peroid=5s\n", "peroid"},
		{"misspelled log option", "workflows:\n  - id: a\n    steps:\n      - target: log://out?levl=debug\n", "levl"},
		{"misspelled file option", "workflows:\n  - id: a\n    steps:\n      - to: {uri: 'file:///tmp?fileNam=x'}\n", "fileNam"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := yamlDocs(t, []byte(tc.yaml))
			err := rs.Validate(docs[0])
			if err == nil {
				t.Fatalf("the schema accepts\n%s", tc.yaml)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// The schema and the decoder agree on what is an error: a few files the loader
// accepts are accepted by the schema too (short forms, former spellings, env
// placeholders in typed values).
func TestSchemaAcceptsWhatTheLoaderAccepts(t *testing.T) {
	t.Setenv("HELIX_SCHEMA_TEST_RATE", "7")
	rs := resolvedSchema(t)
	for _, src := range []string{
		"workflows:\n  - id: a\n    trigger: timer://t?period=1s&delay=0&\n    steps:\n      - target: http://api/search?q=${body.q}&anything=1\n      - target: file://./out?fileName=${body.name}\n      - target: ${env:HELIX_SCHEMA_TEST_RATE}\n",
		"workflows:\n  - id: a\n    trigger: timer://t?period=1s\n    steps:\n      - log: hi\n      - set-body: 42\n      - target: direct://b\n      - wiretap: {uri: 'log://x', max-in-flight: 3}\n",
		"workflows:\n  - id: a\n    trigger: {uri: direct://a}\n    steps:\n      - choice:\n          when:\n            - starlang: 'True'\n              steps: [{log: x}]\n          otherwise: [{log: y}]\n",
		"mcps:\n  - id: m\n    version: 1.0\n    name: 42\n    rate_limit: ${env:HELIX_SCHEMA_TEST_RATE}\n    stateless: yes\n    read_timeout: off\n    session_idle_timeout: 1500\n",
		"helix:\n  starlang_max_memory: 64MiB\n  shutdown_timeout: 1m30s\n  management: {enabled: false}\n",
		"tools:\n  - id: t\n    description: d\n    input:\n      q: string\n      n: {type: integer, default: 3}\n    output: {r: string}\n    steps: []\n",
	} {
		if _, err := config.LoadBytes("helix.yaml", []byte(src)); err != nil {
			t.Fatalf("the loader refuses\n%s\n%v", src, err)
		}
		if err := rs.Validate(yamlDocs(t, []byte(src))[0]); err != nil {
			t.Errorf("the schema refuses\n%s\n%v", src, err)
		}
	}
}

// Every step kind is declared (step.Define), so that the schema and the docs know
// its keys. A kind registered with step.Register alone fails here.
func TestEveryStepKindHasASpec(t *testing.T) {
	for _, s := range step.Specs() {
		if s.Shape == nil {
			t.Errorf("step kind %q is registered without a spec: declare it with step.Define (see log.go)", s.Name)
			continue
		}
		if s.Description == "" {
			t.Errorf("step kind %q has no description", s.Name)
		}
		for _, k := range s.Shape.Keys {
			if k.Description == "" {
				t.Errorf("step kind %q: key %q has no description", s.Name, k.Name)
			}
		}
	}
}

var updateReference = flag.Bool("update", false, "rewrite docs/steps.md")

// docs/steps.md is generated from the step specs. When this fails, regenerate it:
//
//	go test ./internal/step -run TestStepReferenceIsCurrent -update
func TestStepReferenceIsCurrent(t *testing.T) {
	got := step.Reference()
	path := "../../" + step.ReferenceFile
	if *updateReference {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go test ./internal/step -run TestStepReferenceIsCurrent -update", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s is stale: regenerate it with `go test ./internal/step -run TestStepReferenceIsCurrent -update`", step.ReferenceFile)
	}
	for _, s := range step.Specs() {
		if !strings.Contains(string(got), "## `"+s.Name+"`") {
			t.Errorf("the reference has no section for %s", s.Name)
		}
	}
}

// The YAML examples of the documentation validate too: blocks that are whole files
// (a mapping of top-level keys) against the schema, blocks that are step lists
// against its step list definition. Other fragments are skipped.
func TestDocsYAMLBlocksValidateAgainstTheSchema(t *testing.T) {
	b, err := step.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	var file jsonschema.Schema
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	rs, err := file.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The step list definition, resolved with the file's $defs around it.
	var steps jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"$ref": "#/$defs/steps", "$defs": `+defsJSON(t, b)+`}`), &steps); err != nil {
		t.Fatal(err)
	}
	rsSteps, err := steps.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{"helix": true, "workflows": true, "tools": true, "agents": true, "pipelines": true, "mcps": true}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	checked := 0
	for _, f := range docs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, block := range yamlBlocks(string(data)) {
			var v any
			if yaml.Unmarshal([]byte(block.text), &v) != nil {
				continue // a fragment that is not YAML on its own
			}
			v = jsonShape(t, v)
			var err error
			switch v := v.(type) {
			case map[string]any:
				whole := len(v) > 0
				for k := range v {
					whole = whole && top[k]
				}
				if !whole {
					continue
				}
				err = rs.Validate(v)
			case []any:
				if !looksLikeSteps(v) {
					continue
				}
				err = rsSteps.Validate(v)
			default:
				continue
			}
			checked++
			if err != nil {
				t.Errorf("%s:%d (block %d): %v", f, block.line, i, err)
			}
		}
	}
	t.Logf("%d YAML blocks checked", checked)
	if checked < 10 {
		t.Errorf("only %d YAML blocks checked: did the docs' format change?", checked)
	}
}

func defsJSON(t *testing.T, schema []byte) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(schema, &m); err != nil {
		t.Fatal(err)
	}
	return string(m["$defs"])
}

// looksLikeSteps reports whether every item is a one-key mapping, as steps are.
func looksLikeSteps(items []any) bool {
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok || len(m) != 1 {
			return false
		}
	}
	return len(items) > 0
}

type yamlBlock struct {
	line int
	text string
}

// yamlBlocks returns the ```yaml fenced blocks of a Markdown text.
func yamlBlocks(md string) []yamlBlock {
	var out []yamlBlock
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```yaml" {
			continue
		}
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		start := i + 1
		var b strings.Builder
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			l := lines[i]
			if len(l) >= indent {
				l = l[indent:]
			}
			b.WriteString(l + "\n")
		}
		out = append(out, yamlBlock{line: start, text: b.String()})
	}
	return out
}

// A step key written in its former spelling still works, and the build says so
// (the configuration's own decoder warns the same way for its keys).
func TestFormerStepKeySpellingsWarn(t *testing.T) {
	cfg, err := config.LoadBytes("helix.yaml", []byte("workflows:\n  - id: w\n    trigger: direct://w\n    steps:\n"+
		"      - multicast:\n          stop-on-error: true\n          steps: [{log: a}]\n      - aggregate: {strategy: collect}\n"+
		"      - wiretap: {uri: 'log://x', max-in-flight: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	hc := engine.NewContext("test")
	hc.AddComponent("log", helixlog.New(hc.Logger))
	bc := step.NewBuildContext(hc)
	step.BuildSteps(bc, cfg.Workflows[0].Steps)
	if errs := bc.Errors(); len(errs) > 0 {
		t.Fatalf("former spellings are errors: %v", errs)
	}
	got := bc.Warnings().Error()
	for _, want := range []string{"helix.yaml:6:11: workflows[0].steps[0]: stop-on-error is deprecated: write stop_on_error",
		"max-in-flight is deprecated: write max_in_flight"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings\n%s\nlack %q", got, want)
		}
	}
}
