package config

import (
	"strings"
	"testing"
)

func TestCallbacksConfig(t *testing.T) {
	t.Parallel()
	cfg, err := LoadBytes("h.yaml", []byte("helix:\n  callbacks:\n    url: https://helix.example.com/\n    secret: 0123456789abcdef0123456789abcdef\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.Helix.Callbacks; c.URL != "https://helix.example.com" || len(c.Secret) != 32 {
		t.Errorf("callbacks %+v", c)
	}
	for _, c := range []struct{ src, want string }{
		{"helix:\n  callbacks:\n    url: ftp://x\n", "h.yaml:3:10: helix.callbacks.url"},
		{"helix:\n  callbacks:\n    secret: short\n", "h.yaml:3:13: helix.callbacks.secret: the secret is too short"},
		{"helix:\n  callbacks:\n    uri: https://x\n", `unknown key "uri"`},
	} {
		_, err := LoadBytes("h.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "short\"") {
			t.Errorf("the error echoes the secret: %v", err)
		}
	}
}
