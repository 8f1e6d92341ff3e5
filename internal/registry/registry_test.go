package registry

import (
	"errors"
	"slices"
	"testing"
)

func TestLookupTellsRegisteredLeftOutAndUnknownApart(t *testing.T) {
	t.Parallel()
	r := New[func() string]()
	r.Register("openai", func() string { return "model" })
	r.LeftOut("anthropic", "helix_nollm")

	f, ok, err := r.Lookup("openai")
	if !ok || err != nil || f() != "model" {
		t.Fatalf("openai: ok=%v err=%v", ok, err)
	}
	_, ok, err = r.Lookup("anthropic")
	var nib *NotInBuildError
	if ok || !errors.As(err, &nib) || nib.Tag != "helix_nollm" {
		t.Fatalf("anthropic: ok=%v err=%v, want a NotInBuildError for helix_nollm", ok, err)
	}
	want := "anthropic is not available in this build (built with -tags helix_nollm); use a build without it"
	if err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
	if _, ok, err = r.Lookup("gemini"); ok || err != nil {
		t.Errorf("unknown name: ok=%v err=%v, want false and no error", ok, err)
	}
	if err := r.Available("gemini"); err != nil {
		t.Errorf("Available(unknown) = %v, want nil (the caller's own checks name it)", err)
	}
	if got := r.Names(); !slices.Equal(got, []string{"openai"}) {
		t.Errorf("Names() = %v", got)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	t.Parallel()
	r := New[int]()
	r.Register("x", 1)
	defer func() {
		if recover() == nil {
			t.Error("a second Register of the same name did not panic")
		}
	}()
	r.Register("x", 2)
}
