package engine_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The engine imports no concrete component, directly or through another package:
// components depend on the engine, never the reverse (pkg/component holds only the
// contracts and the spec types).
func TestEngineImportsNoComponent(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/arvenza/helix/pkg/component/") {
			t.Errorf("pkg/engine depends on %s", dep)
		}
	}
}
