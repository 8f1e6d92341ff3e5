package depcheck

import (
	"strings"
	"testing"
)

func TestForbiddenReportsTheShortestChainAndHonoursSkip(t *testing.T) {
	g := Graph{
		"root": {"a", "skip"},
		"a":    {"b"},
		"b":    {"bad"},
		"skip": {"bad2"},
		"bad":  {"bad3"},
	}
	isBad := func(p string) bool { return strings.HasPrefix(p, "bad") }
	got := g.Forbidden("root", isBad, "skip")
	if len(got) != 1 || got[0].Package != "bad" || got[0].String() != "root → a → b → bad" {
		t.Errorf("violations = %v", got)
	}
	if got := g.Forbidden("root", isBad); len(got) != 2 || got[1].Package != "bad2" {
		t.Errorf("without skip: %v", got)
	}
	if !g.Imports("root", "a") || g.Imports("root", "b") {
		t.Error("Imports follows only direct imports")
	}
}

func TestLoadReportsGoListErrors(t *testing.T) {
	if _, err := Load(".", "./does-not-exist"); err == nil || !strings.Contains(err.Error(), "go list -deps") {
		t.Errorf("err = %v", err)
	}
}
