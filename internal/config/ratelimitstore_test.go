package config

import (
	"strings"
	"testing"
)

func TestRateLimitStoreAccepted(t *testing.T) {
	t.Setenv("HELIX_TEST_REDIS_PW", "pw")
	for _, url := range []string{
		"redis://127.0.0.1:6379",
		"redis://redis.internal:6379/3",
		"redis://redis.internal",
		"rediss://user:${env:HELIX_TEST_REDIS_PW}@redis.internal:6380/0",
		"redis://:${env:HELIX_TEST_REDIS_PW}@[::1]:6379/",
	} {
		cfg, errs := load(t, `
mcps:
  - id: s
    rate_limit: 60
    rate_limit_store: "`+url+`"
    rate_limit_store_fallback: refuse
`)
		if errs != nil {
			t.Errorf("%s: %v", url, errs)
			continue
		}
		sec := cfg.MCPs[0].Security
		if sec.RateLimitStore != strings.ReplaceAll(url, "${env:HELIX_TEST_REDIS_PW}", "pw") || sec.RateLimitStoreFallback != RateLimitFallbackRefuse ||
			sec.RateLimitStorePos.Line != 5 {
			t.Errorf("%s: decoded %q %q at %v", url, sec.RateLimitStore, sec.RateLimitStoreFallback, sec.RateLimitStorePos)
		}
	}
}

// A bad store URL is an error at the value's position that says what is accepted,
// and never quotes the URL (it may hold a password).
func TestRateLimitStoreErrors(t *testing.T) {
	t.Setenv("HELIX_TEST_EMPTY", "")
	for _, tc := range []struct{ value, want string }{
		{"http://:secret@host:6379", "the store must be a redis:// or rediss:// URL, not http://"},
		{"host:6379", "the store must be a redis:// or rediss:// URL, not host://"},
		{"//:secret@host:6379", "the URL has no scheme"},
		{"redis://:secret@:6379/0", "the URL names no host"},
		{"redis://:secret@host:port/0", "the value does not parse as a URL"},
		{"redis://:secret@host:99999/0", `the port "99999" is not a number from 1 to 65535`},
		{"redis://:secret@host:6379/zero", `the path "/zero" is not a database number`},
		{"redis://:secret@host:6379/0/1", `the path "/0/1" is not a database number`},
		{"redis://:secret@host:6379/0?dial_timeout=1s", "the URL has a query or fragment"},
		{"${env:HELIX_TEST_EMPTY}", "the URL is empty"},
	} {
		_, errs := load(t, `
mcps:
  - id: s
    rate_limit: 60
    rate_limit_store: "`+tc.value+`"
`)
		if errs == nil {
			t.Errorf("%s: accepted", tc.value)
			continue
		}
		msg := errs.Error()
		if !strings.Contains(msg, "helix.yaml:5:23: mcps[0].rate_limit_store: "+tc.want) ||
			!strings.Contains(msg, "redis://[user:password@]host[:port][/db]") {
			t.Errorf("%s: error\n%s\nwant %q at helix.yaml:5:23 and the accepted form", tc.value, msg, tc.want)
		}
		if strings.Contains(msg, "secret") {
			t.Errorf("%s: the error quotes the password: %s", tc.value, msg)
		}
	}
	_, errs := load(t, `
mcps:
  - id: s
    rate_limit: 60
    rate_limit_store: redis://host:6379
    rate_limit_store_fallback: refuze
`)
	if errs == nil || !strings.Contains(errs.Error(), `helix.yaml:6:32: mcps[0].rate_limit_store_fallback: unknown rate_limit_store_fallback "refuze"`) ||
		!strings.Contains(errs.Error(), "refuse") {
		t.Errorf("bad fallback: %v", errs)
	}
}
