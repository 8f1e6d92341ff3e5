package config

import (
	"strings"
	"testing"
)

func TestConsoleKeys(t *testing.T) {
	t.Setenv("HELIX_TEST_CONSOLE_KEY", "c0nsole-key")
	cfg, errs := load(t, `
helix:
  console:
    enabled: true
    auth:
      api_keys:
        - ${env:HELIX_TEST_CONSOLE_KEY}
        - {key: op-key, name: ops, roles: [operator]}
      oauth:
        issuer: https://id.example.com
        audience: helix-console
        jwks_url: https://id.example.com/jwks
        roles_claim: realm_access.roles
    capture:
      sample: 0.25
      max_bytes: 8MiB
`)
	if errs != nil {
		t.Fatal(errs)
	}
	c := cfg.Helix.Console
	if c.Enabled == nil || !*c.Enabled || c.Pos.Line != 4 {
		t.Fatalf("enabled/pos: %+v", c)
	}
	if len(c.Auth.APIKeys) != 2 || c.Auth.APIKeys[0] != "c0nsole-key" || c.Auth.APIKeys[1] != "op-key" ||
		c.Auth.APIKeyPrincipals[1].Name != "ops" || c.Auth.APIKeyPrincipals[1].Roles[0] != "operator" {
		t.Fatalf("api keys: %+v", c.Auth)
	}
	o := c.Auth.OAuth
	if o == nil || o.Issuer != "https://id.example.com" || o.Audience != "helix-console" || o.JWKSURL != "https://id.example.com/jwks" || o.RolesClaim != "realm_access.roles" {
		t.Fatalf("oauth: %+v", o)
	}
	if c.Capture.Sample != 0.25 || c.Capture.MaxBytes != 8<<20 || !c.HasAuth() {
		t.Fatalf("capture: %+v", c.Capture)
	}
	cfg, errs = load(t, "helix:\n  name: x\n")
	if errs != nil || cfg.Helix.Console.Enabled != nil || cfg.Helix.Console.HasAuth() {
		t.Fatalf("console default: %v %+v", errs, cfg.Helix.Console)
	}
}

func TestConsoleErrors(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []string
	}{
		{"helix:\n  console:\n    enabled: maybe\n", []string{"helix.yaml:3:14", "helix.console.enabled"}},
		{"helix:\n  console:\n    enable: true\n", []string{"helix.yaml:3:5", "enable"}},
		{"helix:\n  console:\n    capture:\n      sample: 1.5\n", []string{"helix.yaml:4:15", "sample must be above 0 and at most 1"}},
		{"helix:\n  console:\n    capture:\n      sample: 0\n", []string{"helix.yaml:4:15", "sample must be above 0"}},
		{"helix:\n  console:\n    capture:\n      max_bytes: -5\n", []string{"helix.yaml:4:18", "max_bytes"}},
		{"helix:\n  console:\n    capture:\n      max_bytes: lots\n", []string{"helix.yaml:4:18", "not a size"}},
		{"helix:\n  console:\n    auth:\n      oauth:\n        issuer: https://x\n", []string{"helix.yaml:5:9", "audience"}},
		{"helix:\n  console:\n    auth:\n      api_keys:\n        - {name: a}\n", []string{"helix.yaml:5:11", "key"}},
	} {
		_, errs := load(t, tc.yaml)
		if errs == nil {
			t.Errorf("%q: no error", tc.yaml)
			continue
		}
		if n := strings.Count(errs.Error(), tc.want[0]); n != 1 && strings.Contains(tc.yaml, "max_bytes") {
			t.Errorf("%q: %d errors at %s, want one:\n%v", tc.yaml, n, tc.want[0], errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs.Error(), w) {
				t.Errorf("%q: error %q lacks %q", tc.yaml, errs.Error(), w)
			}
		}
	}
}
