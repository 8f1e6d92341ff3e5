//go:build !helix_noredis

package security

import "github.com/arvenza/helix/internal/component/mcp/security/redislimit"

// Redis (redis://, rediss:// with TLS); a build with -tags helix_noredis leaves
// the Redis client out (ratelimit_noredis.go).
func init() {
	redis := storeKind{
		open: func(o storeOptions) (namedLimiter, error) {
			l, err := redislimit.New(redislimit.Options{URL: o.URL, PerMinute: o.PerMinute, Namespace: o.Namespace,
				Timeout: o.Timeout, Clock: o.Clock})
			if err != nil {
				return nil, err // not a typed nil inside the interface
			}
			return l, nil
		},
		check: func(raw string) error {
			_, err := redislimit.ParseURL(raw)
			return err
		},
	}
	rateLimitStores.Register("redis", redis)
	rateLimitStores.Register("rediss", redis)
}
