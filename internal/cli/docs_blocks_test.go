package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/step"
)

// Every YAML a user may copy is valid for both checks a user has: `helix validate`
// (the loader and the build) and the JSON Schema an editor checks with
// (docs/helix.schema.json, i.e. `helix schema`). The blocks are found anew on every
// run, so new documents and examples are covered without touching this test:
//
//   - every examples/*.yaml file, as a whole file;
//   - every ```yaml block of README.md and docs/**/*.md (generated component pages
//     included).
//
// A block is checked as what it is:
//
//   - a mapping of top-level keys (helix:, workflows:, tools: …): a whole file;
//   - a list of steps (- log: …, - target: …), one step (target: …) or a mapping
//     whose only key is steps:, put into the steps: of a workflow `docs-block`
//     triggered by direct://docs-block; a step list with rag-chunk, rag-embed or
//     rag-store (steps of a pipeline only) goes into a pipelines: entry instead;
//   - anything else (a part of a larger file, such as one entry of a list, or a
//     deliberate mistake shown next to its error) must say so with a marker on the
//     line right before its fence, which gives the reason (below).
//
// The fragment marker; such blocks are only checked to be YAML, and a block without
// a marker that is not a whole file or steps fails the test, naming the marker:
//
//	<!-- docs-test: fragment (one server entry of helix.mcp.servers) -->
//
// A whole file or steps that need what only the reader has (a certificate, a model
// file on disk) say so with the schema-only marker, and are checked against the JSON
// Schema only (helix validate would open the file):
//
//	<!-- docs-test: schema-only (reads the reader's client certificate) -->
//
// ${env:NAME} references without a default are set to "docs-test" for the check, as
// a user of the block would set them, and so is SLACK_BOT_TOKEN, which docs/slack.md
// tells the reader to set before its blocks.
func TestDocsBlocksAreValid(t *testing.T) {
	rs := docsSchema(t)
	blocks := docsBlocks(t)
	if len(blocks) < 50 {
		t.Fatalf("found only %d YAML blocks; is the repository layout different?", len(blocks))
	}
	topKeys, stepKinds := topLevelKeys(t), step.Kinds()
	dir := t.TempDir()
	if _, set := os.LookupEnv("SLACK_BOT_TOKEN"); !set {
		t.Setenv("SLACK_BOT_TOKEN", "xoxb-docs-test")
	}
	for i, b := range blocks {
		t.Run(b.where, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(b.text), &doc); err != nil {
				t.Fatalf("%s: not YAML: %v", b.where, err)
			}
			text := b.text
			switch kind := blockKind(&doc, topKeys, stepKinds); {
			case b.fragment != "":
				t.Skipf("marked as a fragment: %s", b.fragment)
			case kind == "file":
			case kind == "steps" || kind == "step" || kind == "steps:":
				text = wrapSteps(text, kind)
			default:
				t.Fatalf("%s: this block is neither a whole Helix file nor steps; make it one, or put\n"+
					"  <!-- docs-test: fragment (why) -->\non the line before its fence", b.where)
			}
			for _, m := range envRef.FindAllStringSubmatch(text, -1) {
				if _, set := os.LookupEnv(m[1]); !set {
					t.Setenv(m[1], "docs-test")
				}
			}
			file := filepath.Join(dir, fmt.Sprintf("block%d.yaml", i))
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			if b.schemaOnly != "" {
				t.Logf("not run through helix validate: %s", b.schemaOnly)
			} else if code, _, stderr := execute(t, "validate", file); code != ExitOK {
				t.Errorf("%s: helix validate exits %d:\n%s\n--- block as checked:\n%s", b.where, code, stderr, text)
			}
			if err := validateAgainstSchema(rs, text); err != nil {
				t.Errorf("%s: the JSON Schema refuses it: %v\n--- block as checked:\n%s", b.where, err, text)
			}
		})
	}
}

// envRef is a ${env:NAME} reference without a default.
var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// docsBlock is one YAML text to check, and where it is (file:line of its fence).
type docsBlock struct {
	where, text string
	fragment    string // the reason of a docs-test: fragment marker
	schemaOnly  string // the reason of a docs-test: schema-only marker
}

var docsTestMarker = regexp.MustCompile(`^\s*<!--\s*docs-test:\s*(fragment|schema-only)\s*\((.+)\)\s*-->\s*$`)

// docsBlocks collects the blocks of README.md, docs/**/*.md and examples/*.yaml.
func docsBlocks(t *testing.T) []docsBlock {
	t.Helper()
	var mds []string
	mds = append(mds, "../../README.md")
	err := filepath.WalkDir("../../docs", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			mds = append(mds, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []docsBlock
	for _, md := range mds {
		out = append(out, markdownBlocks(t, md)...)
	}
	examples, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range examples {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, docsBlock{where: strings.TrimPrefix(f, "../../"), text: string(src)})
	}
	return out
}

// markdownBlocks returns the ```yaml (or ```yml) blocks of one Markdown file.
func markdownBlocks(t *testing.T, path string) []docsBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	name := strings.TrimPrefix(path, "../../")
	var out []docsBlock
	var cur *docsBlock
	var indent, prev string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		switch {
		case cur == nil && (trimmed == "```yaml" || trimmed == "```yml"):
			indent = text[:strings.Index(text, "`")]
			cur = &docsBlock{where: fmt.Sprintf("%s:%d", name, line)}
			if m := docsTestMarker.FindStringSubmatch(prev); m != nil && m[1] == "fragment" {
				cur.fragment = m[2]
			} else if m != nil {
				cur.schemaOnly = m[2]
			}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			// A block inside a list item is indented as a whole.
			cur.text += strings.TrimPrefix(text, indent) + "\n"
		}
		prev = text
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Errorf("%s: unclosed ```yaml fence", cur.where)
	}
	return out
}

// topLevelKeys are the keys a Helix file may have at its top level.
func topLevelKeys(t *testing.T) []string {
	t.Helper()
	file, err := config.DescribeFile()
	if err != nil {
		t.Fatal(err)
	}
	return file.KeyNames()
}

// blockKind says what a block is: "file", "steps" (a step list), "step" (one
// step), "steps:" (a mapping of steps: only) or "" (something else).
func blockKind(doc *yaml.Node, topKeys, stepKinds []string) string {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return ""
	}
	n := doc.Content[0]
	switch n.Kind {
	case yaml.MappingNode:
		if keysIn(n, topKeys) {
			return "file"
		}
		if len(n.Content) == 2 && keysIn(n, stepKinds) {
			return "step"
		}
		if len(n.Content) == 2 && n.Content[0].Value == "steps" && isStepList(n.Content[1], stepKinds) {
			return "steps:"
		}
	case yaml.SequenceNode:
		if isStepList(n, stepKinds) {
			return "steps"
		}
	}
	return ""
}

func isStepList(n *yaml.Node, stepKinds []string) bool {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return false
	}
	for _, it := range n.Content {
		if it.Kind != yaml.MappingNode || len(it.Content) != 2 || !keysIn(it, stepKinds) {
			return false
		}
	}
	return true
}

func keysIn(n *yaml.Node, names []string) bool {
	for i := 0; i < len(n.Content); i += 2 {
		if !slices.Contains(names, n.Content[i].Value) {
			return false
		}
	}
	return len(n.Content) > 0
}

// wrapSteps puts steps (kind "steps"), one step ("step") or a steps: mapping
// ("steps:") into a workflow, or into a pipeline when they are a pipeline's.
func wrapSteps(text, kind string) string {
	head := "workflows:\n  - id: docs-block\n    trigger: direct://docs-block\n"
	if pipelineSteps.MatchString(text) {
		head = "pipelines:\n  - id: docs-block\n"
	}
	var b strings.Builder
	b.WriteString(head)
	if kind != "steps:" {
		b.WriteString("    steps:\n")
	}
	for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch {
		case kind == "steps:":
			b.WriteString("    " + line + "\n")
		case kind == "step" && i == 0:
			b.WriteString("      - " + line + "\n")
		case kind == "step":
			b.WriteString("        " + line + "\n")
		default:
			b.WriteString("      " + line + "\n")
		}
	}
	return b.String()
}

// pipelineSteps finds a step only a pipelines: entry may have.
var pipelineSteps = regexp.MustCompile(`(?m)^\s*-?\s*(rag-chunk|rag-embed|rag-store):`)

// docsSchema is the resolved JSON Schema of Helix files.
func docsSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	b, err := step.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// validateAgainstSchema checks YAML text against the schema as an editor's YAML
// language server does: the YAML as JSON values.
func validateAgainstSchema(rs *jsonschema.Resolved, text string) error {
	var doc any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		return err
	}
	return rs.Validate(inst)
}

// Forms the documentation describes in prose (not in a YAML block) are valid for
// both checks too.
func TestSchemaAcceptsDocumentedForms(t *testing.T) {
	t.Parallel()
	rs := docsSchema(t)
	dir := t.TempDir()
	for i, src := range []string{
		// docs/rag.md: a source's options as a query.
		"pipelines:\n  - id: docs\n    source: file://./docs?include=*.md&exclude=drafts/*\n",
		"pipelines:\n  - id: docs\n    source: file://./kb?text_field=body&title_field=name\n",
		"pipelines:\n  - id: docs\n    source: {uri: \"file://./docs?include=*.md\"}\n",
		// A trigger's parameters.
		"workflows:\n  - id: poll\n    trigger:\n      uri: postgres://db/shop\n      parameters: {query: SELECT 1, maxRows: 10}\n",
		// A workflow's input: and output:, in every form of a tools: entry's fields.
		"workflows:\n  - id: order\n    trigger: direct://order\n    input:\n      limit: integer\n" +
			"      tags: {type: array, items: string}\n      item: {type: object, required: true, properties: {sku: string, qty: {type: integer, default: 1}}}\n" +
			"      kind: {type: string, enum: [a, b], description: which}\n    output:\n      id: {type: integer, required: true}\n",
	} {
		file := filepath.Join(dir, fmt.Sprintf("form%d.yaml", i))
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := execute(t, "validate", file); code != ExitOK {
			t.Errorf("helix validate exits %d on\n%s%s", code, src, stderr)
		}
		if err := validateAgainstSchema(rs, src); err != nil {
			t.Errorf("the JSON Schema refuses\n%s%v", src, err)
		}
	}
	// …and the schema still refuses what validate refuses.
	for _, src := range []string{
		"pipelines:\n  - id: docs\n    source: file://./docs?inclde=*.md\n",
		"pipelines:\n  - id: docs\n    source: http://example.com/docs\n",
		"workflows:\n  - id: order\n    trigger: direct://order\n    input: [a, b]\n",
		"workflows:\n  - id: order\n    trigger: direct://order\n    output: {id: {type: integer, requird: true}}\n",
	} {
		if err := validateAgainstSchema(rs, src); err == nil {
			t.Errorf("the JSON Schema accepts\n%s", src)
		}
	}
}
