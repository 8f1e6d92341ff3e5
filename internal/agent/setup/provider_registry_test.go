package setup

import (
	"testing"

	"github.com/arvenza/helix/internal/config"
)

// A provider this build left out is refused at model.provider's own position,
// naming the tag (the real tags are checked by cmd/helix's slim build test).
func TestLeftOutProviderIsRefusedAtItsPosition(t *testing.T) {
	providers.LeftOut("test-left-out", "helix_notest")
	cfg, err := config.LoadBytes("helix.yaml", []byte(`agents:
  - id: a
    model:
      model: m
      provider: test-left-out
`))
	if err != nil {
		// The configuration's own enum refuses the made-up name; the agent part is
		// what this test is about.
		t.Logf("config: %v", err)
	}
	if cfg == nil || len(cfg.Agents) != 1 {
		t.Fatalf("no agent decoded: %v", err)
	}
	_, errs := Build(cfg.Agents[0], "agents[0]", Deps{})
	want := "helix.yaml:5:17: agents[0].model.provider: test-left-out is not available in this build (built with -tags helix_notest); use a build without it"
	for _, e := range errs {
		if e.Error() == want {
			return
		}
	}
	t.Errorf("errors %v, want %q", errs, want)
}
