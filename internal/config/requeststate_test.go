package config

import (
	"strings"
	"testing"
	"time"
)

func TestRequestStateKeys(t *testing.T) {
	t.Setenv("HELIX_TEST_STATE_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=") // 32 bytes
	cfg, errs := load(t, `
mcps:
  - id: s
    request_state:
      key: ${env:HELIX_TEST_STATE_KEY}
      ttl: 2m
      store: redis://cache:6379/1
`)
	if errs != nil {
		t.Fatal(errs)
	}
	rs := cfg.MCPs[0].RequestState
	if rs == nil || rs.TTL != 2*time.Minute || rs.Store != "redis://cache:6379/1" || rs.Pos.Line != 5 {
		t.Fatalf("decoded %+v", rs)
	}
	if k, err := DecodeRequestStateKey(rs.Key); err != nil || string(k) != "0123456789abcdef0123456789abcdef" {
		t.Errorf("key %q: %v", k, err)
	}
	if k, err := DecodeRequestStateKey(strings.Repeat("ab", 32)); err != nil || len(k) != 32 {
		t.Errorf("hex key: %v", err)
	}
}

// A bad key is an error at its position that does not quote the key (a secret).
func TestRequestStateKeyErrors(t *testing.T) {
	for src, want := range map[string]string{
		`key: c2VjcmV0LXNob3J0`: "helix.yaml:5:12: mcps[0].request_state.key: request_state key: the key decodes to 12 bytes, not 32",
		`key: "not a key!"`:     "mcps[0].request_state.key: request_state key: the key is neither 32 bytes written as base64 nor 64 hex digits",
		`key: ""`:               "request_state key: the key decodes to 0 bytes",
		`ttl: -5s`:              "mcps[0].request_state.ttl",
		`nonce: x`:              `unknown key "nonce" in request_state`,
	} {
		_, errs := load(t, "\nmcps:\n  - id: s\n    request_state:\n      "+src+"\n")
		if errs == nil || !strings.Contains(errs.Error(), want) {
			t.Errorf("%s: %v, want %q", src, errs, want)
			continue
		}
		if strings.Contains(errs.Error(), "c2VjcmV0") || strings.Contains(errs.Error(), "not a key!") {
			t.Errorf("%s: the error quotes the key: %v", src, errs)
		}
	}
}
