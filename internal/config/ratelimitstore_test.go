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

// An unknown fallback is an error with a did-you-mean. (What a store URL must
// look like is redislimit's check: TestStoreURLErrors there.)
func TestRateLimitStoreFallbackErrors(t *testing.T) {
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
