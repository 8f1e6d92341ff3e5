package all_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/component"
)

// ghost stands for a component a build tag left out (kafka.go's helix_nokafka):
// its counterpart file records it as absent.
func init() {
	component.RegisterAbsent("ghost", "built with -tags helix_noghost")
	config.DeclareAbsentModuleSettings("ghost", "built with -tags helix_noghost")
}

// A configuration naming a component left out of the build, as a trigger, a target
// or with its helix.<scheme> settings, gets "not available in this build" with the
// reason at each position, not an unknown scheme with a did-you-mean.
func TestAbsentComponentIsRefusedWithTheReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), "helix.yaml")
	text := "helix:\n  ghost:\n    brokers: x\nworkflows:\n  - id: w\n    trigger: ghost://in\n    steps:\n      - to: ghost://out\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := app.Load(app.Options{}, path)
	if err == nil {
		t.Fatal("a configuration using an absent component loaded")
	}
	msg := err.Error()
	for _, want := range []string{
		"helix.yaml:3:5: helix.ghost: ghost:// is not available in this build (built with -tags helix_noghost)",
		"helix.yaml:6:14: workflows[0].trigger: ghost:// is not available in this build (built with -tags helix_noghost)",
		"helix.yaml:8:13: workflows[0].steps[0]: ghost:// is not available in this build (built with -tags helix_noghost)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "did you mean") {
		t.Errorf("an absent component got a did-you-mean:\n%s", msg)
	}
}
