package config

import (
	"reflect"
	"strings"
	"testing"
)

// An api_keys entry is a key or a mapping naming who the key stands for; the
// principals keep the keys' order.
func TestAPIKeysWithNamesAndRoles(t *testing.T) {
	t.Setenv("HELIX_TEST_ALICE_KEY", "alice-key")
	cfg, errs := load(t, `
mcps:
  - id: gw
    addr: "127.0.0.1:0"
    api_keys:
      - "plain-key"
      - { key: "${env:HELIX_TEST_ALICE_KEY}", name: alice, roles: [support, triage] }
      - key: bob-key
        name: bob
    auth:
      issuer: https://issuer.example.com
      roles_claim: groups
`)
	if errs != nil {
		t.Fatal(errs)
	}
	s := cfg.MCPs[0].Security
	if !reflect.DeepEqual(s.APIKeys, []string{"plain-key", "alice-key", "bob-key"}) {
		t.Errorf("keys %q", s.APIKeys)
	}
	want := []APIKeyPrincipal{{}, {Name: "alice", Roles: []string{"support", "triage"}}, {Name: "bob"}}
	if !reflect.DeepEqual(s.APIKeyPrincipals, want) {
		t.Errorf("principals %+v", s.APIKeyPrincipals)
	}
	if s.Auth == nil || s.Auth.RolesClaim != "groups" {
		t.Errorf("auth %+v", s.Auth)
	}
	// One key without a list is still one key.
	cfg, errs = load(t, "mcps:\n  - id: gw\n    addr: \"127.0.0.1:0\"\n    api_keys: only\n")
	if errs != nil || !reflect.DeepEqual(cfg.MCPs[0].APIKeys, []string{"only"}) || len(cfg.MCPs[0].APIKeyPrincipals) != 1 {
		t.Errorf("a single key: %v %+v", errs, cfg)
	}
}

func TestAPIKeyMappingErrors(t *testing.T) {
	for _, tc := range []struct{ entry, want string }{
		{"{ name: alice }", `helix.yaml:5:9: mcps[0].api_keys[0]`},
		{"{ key: k, nmae: alice }", `helix.yaml:5:19: mcps[0].api_keys[0]: unknown key "nmae" in api_key (did you mean "name"?)`},
		{"{ key: k, roles: { a: b } }", "mcps[0].api_keys[0].roles"},
	} {
		_, errs := load(t, "mcps:\n  - id: gw\n    addr: \"127.0.0.1:0\"\n    api_keys:\n      - "+tc.entry+"\n")
		if errs == nil || !strings.Contains(errs.Error(), tc.want) {
			t.Errorf("%s: errors %v, want %q", tc.entry, errs, tc.want)
		}
	}
}
