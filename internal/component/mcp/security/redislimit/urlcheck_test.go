package redislimit_test

import (
	"strings"
	"testing"

	_ "github.com/arvenza/helix/internal/component/mcp/security/redislimit" // registers the store URL check
	"github.com/arvenza/helix/internal/config"
)

func loadStore(url string) error {
	_, err := config.LoadBytes("helix.yaml", []byte(`
mcps:
  - id: s
    rate_limit: 60
    rate_limit_store: "`+url+`"
`))
	return err
}

func TestStoreURLAccepted(t *testing.T) {
	t.Setenv("HELIX_TEST_REDIS_PW", "pw")
	for _, url := range []string{
		"redis://127.0.0.1:6379",
		"redis://redis.internal:6379/3",
		"redis://redis.internal",
		"rediss://user:${env:HELIX_TEST_REDIS_PW}@redis.internal:6380/0",
		"redis://:${env:HELIX_TEST_REDIS_PW}@[::1]:6379/",
	} {
		if err := loadStore(url); err != nil {
			t.Errorf("%s: %v", url, err)
		}
	}
}

// A bad store URL is an error at the value's position that says what is accepted,
// and never quotes the URL (it may hold a password).
func TestStoreURLErrors(t *testing.T) {
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
		{"redis://:secret@host:/0", "the URL has an empty port"},
		{"${env:HELIX_TEST_EMPTY}", "the URL is empty"},
	} {
		err := loadStore(tc.value)
		if err == nil {
			t.Errorf("%s: accepted", tc.value)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "helix.yaml:5:23: mcps[0].rate_limit_store: "+tc.want) ||
			!strings.Contains(msg, "redis://[user:password@]host[:port][/db]") {
			t.Errorf("%s: error\n%s\nwant %q at helix.yaml:5:23 and the accepted form", tc.value, msg, tc.want)
		}
		if strings.Contains(msg, "secret") {
			t.Errorf("%s: the error quotes the password: %s", tc.value, msg)
		}
	}
}
