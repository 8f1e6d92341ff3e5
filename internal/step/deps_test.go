package step_test

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/depcheck"
)

const module = "github.com/arvenza/helix/"

// heavyModules are the SDKs a slim build leaves out; a step must not pull them in.
var heavyModules = []string{
	"github.com/openai/", "github.com/anthropics/", "github.com/redis/", "github.com/twmb/franz-go",
}

// internal/step is the step contract and the generic steps: it depends on no
// concrete component and no RAG code, so that a build (or a program embedding the
// engine) gets only the components it imports. Step kinds of a module register
// themselves from the module (internal/rag/ragstep); internal/step/allsteps lists them.
func TestStepImportsNoConcreteComponent(t *testing.T) {
	g, err := depcheck.Load(".", ".")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := func(p string) bool {
		rel, ours := strings.CutPrefix(p, module)
		if ours {
			return rel == "internal/rag" || strings.HasPrefix(rel, "internal/rag/") ||
				strings.HasPrefix(rel, "internal/component/") || strings.HasPrefix(rel, "internal/agent")
		}
		for _, m := range heavyModules {
			if strings.HasPrefix(p, m) {
				return true
			}
		}
		return false
	}
	for _, v := range g.Forbidden(module+"internal/step", forbidden) {
		t.Errorf("internal/step depends on %s: %s", v.Package, v)
	}
}
