package workflow

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
)

// load loads one YAML document with its source, as the console sees it.
func load(t *testing.T, name, text string) ([]*Graph, *Files) {
	t.Helper()
	cfg, err := config.LoadBytes(name, []byte(text))
	if cfg == nil {
		t.Fatalf("load: %v", err)
	}
	files := FilesFromBytes(map[string][]byte{name: []byte(text)})
	return Build(cfg, files), files
}

func find(gs []*Graph, kind, id string) *Graph {
	for _, g := range gs {
		if g.Kind == kind && g.ID == id {
			return g
		}
	}
	return nil
}

// Not parallel: t.Setenv (examples/gateway.yaml needs UPSTREAM_URL).
func TestEveryExampleBuildsAGraph(t *testing.T) {
	t.Setenv("UPSTREAM_URL", "http://127.0.0.1:1/mcp")
	paths, err := filepath.Glob("../../../examples/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			cfg, err := config.Load(p)
			if cfg == nil {
				t.Fatalf("load: %v", err)
			}
			gs := Build(cfg, ReadFiles(cfg.Files))
			if len(gs) != len(cfg.Workflows)+len(cfg.Tools)+countAgents(cfg)+len(cfg.Pipelines) {
				t.Fatalf("%d graphs for %d workflows, %d tools, %d agents, %d pipelines", len(gs), len(cfg.Workflows), len(cfg.Tools), countAgents(cfg), len(cfg.Pipelines))
			}
			for _, g := range gs {
				if len(g.Nodes) == 0 || g.Nodes[0].Kind != "trigger" {
					t.Fatalf("%s %s: no trigger node", g.Kind, g.ID)
				}
				for i, n := range g.Nodes {
					if n.N != i {
						t.Fatalf("%s: node %d numbered %d", g.ID, i, n.N)
					}
				}
				l := Layout(g)
				if l.Width <= 0 || l.Height <= 0 || len(l.Boxes) != len(g.Nodes) {
					t.Fatalf("%s: layout %dx%d with %d boxes for %d nodes", g.ID, l.Width, l.Height, len(l.Boxes), len(g.Nodes))
				}
			}
		})
	}
}

func countAgents(cfg *config.Config) int {
	n := 0
	for _, a := range cfg.Agents {
		if a.ID != "" {
			n++
		}
	}
	return n
}

func TestQuickstartGraph(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load("../../../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gs := Build(cfg, ReadFiles(cfg.Files))
	g := find(gs, "workflow", "greet-http")
	if g == nil {
		t.Fatal("no greet-http")
	}
	if !strings.Contains(g.Trigger, "${env:QUICKSTART_PORT:-8080}") {
		t.Errorf("trigger %q is not as written", g.Trigger)
	}
	if len(g.Steps) != 2 || g.Steps[0].Kind != "log" || g.Steps[1].Kind != "target" {
		t.Fatalf("steps = %+v", g.Steps)
	}
	if g.Steps[0].Label != "greeting ${body.name}" || g.Steps[0].Top != 0 || g.Steps[1].Top != 1 {
		t.Errorf("log = %+v", g.Steps[0])
	}
	if g.Steps[1].Link != "greet" || g.Steps[1].Label != "direct://greet" {
		t.Errorf("target = %+v, want a link to greet", g.Steps[1])
	}
	if p := g.Steps[1].Pos; p.Line == 0 || !strings.HasSuffix(p.File, "quickstart.yaml") {
		t.Errorf("target at %v", p)
	}
	greet := find(gs, "workflow", "greet")
	if greet == nil || len(greet.Steps) != 1 || greet.Steps[0].Kind != "transform" || !strings.HasPrefix(greet.Steps[0].Label, `name = payload.get("name", "World")`) {
		t.Fatalf("greet = %+v", greet)
	}
}

const branchy = `
workflows:
  - id: router
    trigger: direct://in
    error_handler:
      dead_letter_channel: direct://dead
      default: { maximum_redeliveries: 3 }
    on_error:
      status: 503
    steps:
      - choice:
          when:
            - starlang: payload["amount"] >= 1000 and payload["currency"] == "EUR" and header("x") != "y"
              steps:
                - log: big
                - target: direct://dead
            - starlang: payload["amount"] < 0
              steps:
                - set-body: { starlang: '"negative"' }
          otherwise:
            steps:
              - log: other
      - multicast:
          strategy: parallel
          steps:
            - log: one
            - log: two
      - split:
          starlang: payload
          steps:
            - log: item
      - frobnicate: { anything: [1, 2] }
  - id: dead
    trigger: direct://dead
    steps:
      - log: dead
`

func TestBranchesFanOutAndFailure(t *testing.T) {
	t.Parallel()
	gs, _ := load(t, "b.yaml", branchy)
	g := find(gs, "workflow", "router")
	if g == nil || len(g.Steps) != 4 {
		t.Fatalf("router = %+v", g)
	}
	choice := g.Steps[0]
	if len(choice.Branches) != 3 || choice.Label != "3 branches" {
		t.Fatalf("choice branches = %+v", choice.Branches)
	}
	if l := choice.Branches[0].Label; !strings.HasPrefix(l, `when payload["amount"] >= 1000`) || !strings.HasSuffix(l, "…") || len([]rune(l)) > 45 {
		t.Errorf("when label = %q, want the condition shortened", l)
	}
	if b := choice.Branches[0]; len(b.Steps) != 2 || b.Steps[1].Link != "dead" || b.Steps[0].Top != -1 {
		t.Errorf("first branch = %+v", b.Steps)
	}
	if b := choice.Branches[1]; len(b.Steps) != 1 || b.Steps[0].Kind != "set-body" {
		t.Errorf("second branch = %+v", b.Steps)
	}
	if b := choice.Branches[2]; b.Label != "otherwise" || len(b.Steps) != 1 || b.Steps[0].Label != "other" {
		t.Errorf("otherwise = %+v", b)
	}
	mc := g.Steps[1]
	if !mc.FanOut || len(mc.Branches) != 2 || mc.Label != "2 branches, in parallel" || mc.Branches[1].Steps[0].Label != "two" {
		t.Errorf("multicast = %+v", mc)
	}
	if sp := g.Steps[2]; len(sp.Branches) != 1 || sp.Branches[0].Label != "for each element" || sp.Branches[0].Steps[0].Label != "item" {
		t.Errorf("split = %+v", sp)
	}
	if u := g.Steps[3]; u.Kind != "frobnicate" || len(u.Branches) != 0 {
		t.Errorf("unknown kind = %+v", u)
	}
	if len(g.Failure) != 2 || g.Failure[0].Kind != "error handler" || g.Failure[0].Label != "redeliveries: 3" {
		t.Fatalf("failure = %+v", g.Failure)
	}
	dl := g.Failure[0].Branches[0].Steps[0]
	if dl.Kind != "dead letter" || dl.Label != "direct://dead" || dl.Link != "dead" || dl.Pos.Line != 6 {
		t.Errorf("dead letter = %+v", dl)
	}
	if g.Failure[1].Kind != "on_error" || g.Failure[1].Label != "answers status 503" {
		t.Errorf("on_error = %+v", g.Failure[1])
	}
	// Nested positions point at the nested step's key.
	if p := choice.Branches[0].Steps[0].Pos; p.Line != 15 || p.Col != 19 {
		t.Errorf("nested log at %v, want b.yaml:15:19", p)
	}
}

func TestSnippetIsTheYAMLAsWritten(t *testing.T) {
	t.Setenv("GRAPH_TEST_TOKEN", "s3cr3t-value-never-shown")
	text := `workflows:
  - id: call
    trigger: direct://call
    steps:
      - target:
          uri: http://127.0.0.1:1/x?token=${env:GRAPH_TEST_TOKEN}

          parameters: { a: 1 }
      - log: after
`
	gs, files := load(t, "s.yaml", text)
	g := find(gs, "workflow", "call")
	tgt := g.Steps[0]
	if strings.Contains(tgt.Label, "s3cr3t") || !strings.Contains(tgt.Label, "${env:GRAPH_TEST_TOKEN}") {
		t.Errorf("label = %q", tgt.Label)
	}
	got, truncated, ok := files.Snippet(tgt.Pos)
	want := "- target:\n    uri: http://127.0.0.1:1/x?token=${env:GRAPH_TEST_TOKEN}\n\n    parameters: { a: 1 }"
	if !ok || truncated || got != want {
		t.Fatalf("snippet = %q (ok %v), want %q", got, ok, want)
	}
	if _, _, ok := files.Snippet(config.Pos{File: "other.yaml", Line: 1}); ok {
		t.Error("a snippet of a file never read")
	}
	if _, _, ok := files.Snippet(config.Pos{File: "s.yaml", Line: 999}); ok {
		t.Error("a snippet past the end")
	}
}

func TestSnippetIsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("workflows:\n  - id: big\n    trigger: direct://big\n    steps:\n      - transform:\n          starlang: |\n")
	for i := 0; i < 1000; i++ {
		b.WriteString("            x = 1\n")
	}
	gs, files := load(t, "big.yaml", b.String())
	got, truncated, ok := files.Snippet(find(gs, "workflow", "big").Steps[0].Pos)
	if !ok || !truncated || strings.Count(got, "\n") >= maxSnippetLines {
		t.Fatalf("snippet of %d lines, truncated %v", strings.Count(got, "\n")+1, truncated)
	}
}

// Deep and huge step lists are drawn up to a bound, never failing.
func TestHostileShapesAreBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("workflows:\n  - id: deep\n    trigger: direct://deep\n    steps:\n")
	ind := "      "
	for i := 0; i < 40; i++ {
		b.WriteString(ind + "- split:\n" + ind + "    starlang: payload\n" + ind + "    steps:\n")
		ind += "        "
	}
	b.WriteString(ind + "- log: bottom\n")
	b.WriteString("  - id: wide\n    trigger: direct://wide\n    steps:\n")
	for i := 0; i < maxNodes+50; i++ {
		b.WriteString("      - log: x\n")
	}
	cfg, _ := config.LoadBytes("h.yaml", []byte(b.String()))
	if cfg == nil {
		t.Fatal("not loaded")
	}
	gs := Build(cfg, FilesFromBytes(map[string][]byte{"h.yaml": []byte(b.String())}))
	deep := find(gs, "workflow", "deep")
	if deep == nil {
		t.Fatal("no deep graph")
	}
	if got := len(deep.Nodes); got > maxDepth+3 {
		t.Errorf("deep graph has %d nodes", got)
	}
	wide := find(gs, "workflow", "wide")
	if len(wide.Nodes) > maxNodes+1 || wide.Steps[len(wide.Steps)-1].Kind != "more steps" {
		t.Errorf("wide graph: %d nodes, last %q", len(wide.Nodes), wide.Steps[len(wide.Steps)-1].Kind)
	}
	Layout(deep)
	Layout(wide)
}

func TestFilesSkipWhatCannotBeRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("a: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := ReadFiles([]string{bad, filepath.Join(dir, "missing.yaml")})
	if _, _, ok := fs.Snippet(config.Pos{File: filepath.Join(dir, "missing.yaml"), Line: 1, Col: 1}); ok {
		t.Error("snippet of a missing file")
	}
}
