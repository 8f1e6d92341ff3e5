package workflow

import (
	"strings"
	"testing"
)

// The nested steps the engine traces — a choice's branches, a multicast's, a
// split's steps — are the graph's counted nested nodes, known by position; a
// list of one-key mappings under a kind the engine does not run as steps is
// drawn but not counted.
func TestNestedPositionsAreTheTracedSteps(t *testing.T) {
	t.Parallel()
	gs, _ := load(t, "b.yaml", branchy+`  - id: odd
    trigger: direct://odd
    steps:
      - frobnicate:
          things:
            - log: not a step
`)
	got := strings.Join(find(gs, "workflow", "router").NestedPositions(), " ")
	want := "b.yaml:15:19 b.yaml:16:19 b.yaml:19:19 b.yaml:22:17 b.yaml:26:15 b.yaml:27:15 b.yaml:31:15"
	if got != want {
		t.Errorf("router's nested positions %q, want %q", got, want)
	}
	odd := find(gs, "workflow", "odd")
	if p := odd.NestedPositions(); len(p) != 0 {
		t.Errorf("odd's list under an unknown kind is counted: %q", p)
	}
	if n := odd.Nodes[len(odd.Nodes)-1]; n.Kind != "log" || n.Nested {
		t.Errorf("odd's last node = %+v, want a drawn log that is not counted", n)
	}
}
