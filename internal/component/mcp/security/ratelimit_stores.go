package security

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/arvenza/helix/internal/registry"
)

// storeOptions are what a shared store needs from the stack's Config.
type storeOptions struct {
	URL       string
	PerMinute int
	Namespace string
	Timeout   time.Duration    // 0: the store's default
	Clock     func() time.Time // nil: the store's own clock (tests replace it)
}

// storeKind is one kind of shared rate-limit store, chosen by the URL's scheme.
type storeKind struct {
	// open builds the store; it performs no I/O.
	open func(storeOptions) (namedLimiter, error)
	// check validates a URL without building anything.
	check func(raw string) error
}

// rateLimitStores are the shared stores linked into this build, by URL scheme,
// filled by the registration files (ratelimit_redis.go), each guarded by the
// build tag that leaves its client out: this file imports no store.
var rateLimitStores = registry.New[storeKind]()

// storeKindOf looks up the kind of store raw names. Errors never quote the URL,
// which may hold a password.
func storeKindOf(raw string) (storeKind, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return storeKind{}, errors.New("rate_limit_store does not parse as a URL")
	}
	k, ok, err := rateLimitStores.Lookup(u.Scheme)
	if err != nil {
		return storeKind{}, err
	}
	if !ok {
		return storeKind{}, fmt.Errorf("rate_limit_store must be a redis:// or rediss:// URL, not %q", u.Scheme+"://")
	}
	return k, nil
}

// CheckRateLimitStore reports whether this build can use the rate_limit_store at
// raw: a *registry.NotInBuildError when the build left that kind of store out
// (helix_noredis). It builds and connects nothing.
func CheckRateLimitStore(raw string) error {
	k, err := storeKindOf(raw)
	if err != nil {
		return err
	}
	return k.check(raw)
}
