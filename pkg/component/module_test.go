package component_test

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/component"
)

func moduleSpec(scheme string, aliases ...string) *component.Spec {
	return &component.Spec{Scheme: scheme, Aliases: aliases, Summary: "test", Syntax: scheme + "://x", Direction: component.Both}
}

func mustPanic(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil || !strings.Contains(r.(string), want) {
			t.Errorf("panic %v, want one containing %q", r, want)
		}
	}()
	fn()
}

// A module is found under its scheme and aliases, in any case, and knows the
// package that registered it; registering a scheme twice is refused at start-up.
func TestRegisterAndLookup(t *testing.T) {
	sp := moduleSpec("modtest-a", "modtest-a2")
	sp.FreshExchanges = true
	component.Register(component.Module{Spec: sp})
	for _, s := range []string{"modtest-a", "MODTEST-A2"} {
		m, ok := component.Lookup(s)
		if !ok || m.Spec != sp {
			t.Errorf("Lookup(%q) = %v, %v", s, m.Spec, ok)
		}
		if m.Package() != "github.com/arvenza/helix/pkg/component_test" {
			t.Errorf("Package() = %q, want the registering test package", m.Package())
		}
	}
	if component.SpecOf("modtest-none") != nil {
		t.Error("an unknown scheme has a spec")
	}
	if !component.StartsFresh("modtest-a://x") || !component.StartsFresh("MODTEST-A2://x?y=1") {
		t.Error("a fresh-exchange trigger is not fresh")
	}
	for _, trigger := range []string{"", "modtest-a", "modtest-none://x", "://x"} {
		if component.StartsFresh(trigger) {
			t.Errorf("StartsFresh(%q) is true", trigger)
		}
	}
	mustPanic(t, "modtest-a2:// registered twice", func() { component.Register(component.Module{Spec: moduleSpec("modtest-b", "modtest-a2")}) })
	if _, ok := component.Lookup("modtest-b"); ok {
		t.Error("a refused module was registered")
	}
	mustPanic(t, "without a spec", func() { component.Register(component.Module{}) })
	mustPanic(t, "scheme, summary and syntax are required", func() { component.Register(component.Module{Spec: &component.Spec{Scheme: "modtest-c"}}) })
	found := false
	for _, m := range component.Modules() {
		found = found || m.Spec == sp
	}
	if !found {
		t.Error("Modules() lacks the module")
	}
}

// A scheme left out of the build says why, and cannot also be registered.
func TestRegisterAbsent(t *testing.T) {
	component.RegisterAbsent("modtest-gone", "built with -tags modtest_nogone")
	if why, ok := component.Absent("MODTEST-GONE"); !ok || why != "built with -tags modtest_nogone" {
		t.Errorf("Absent = %q, %v", why, ok)
	}
	if _, ok := component.Absent("modtest-here"); ok {
		t.Error("an unknown scheme is absent")
	}
	mustPanic(t, "left out of the build", func() { component.Register(component.Module{Spec: moduleSpec("modtest-gone")}) })
	component.Register(component.Module{Spec: moduleSpec("modtest-here")})
	mustPanic(t, "is registered", func() { component.RegisterAbsent("modtest-here", "x") })
}
