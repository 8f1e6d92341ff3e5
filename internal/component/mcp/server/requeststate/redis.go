//go:build !helix_noredis

package requeststate

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/arvenza/helix/internal/config"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// RedisStore is a [UsedStore] in Redis, shared by every replica: an id is used
// with SET NX and an expiry, so exactly one retry anywhere gets it fresh. It is
// the go-redis client the rate-limit store uses (security/redislimit), set up the
// same way: bounded waits, no retries (the retry is the client's).
type RedisStore struct {
	client    *redis.Client
	namespace string
	timeout   time.Duration
}

// RedisTimeout bounds one Redis call.
const RedisTimeout = 2 * time.Second

// CheckStoreURL reports what is wrong with a store: URL, in words that never quote
// it (it may hold a password).
func CheckStoreURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("store does not parse as a URL")
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fmt.Errorf("store must be a redis:// or rediss:// URL, not %q", u.Scheme+"://")
	}
	if u.Hostname() == "" {
		return errors.New("store names no host")
	}
	if _, err := redis.ParseURL(raw); err != nil {
		return errors.New("store is not a Redis URL go-redis can use (redis://[user:password@]host[:port][/db])")
	}
	return nil
}

// NewRedisStore connects lazily (no I/O here) to the Redis at rawURL; keys are
// "<namespace>:rs:<id>".
func NewRedisStore(rawURL, namespace string) (*RedisStore, error) {
	if err := CheckStoreURL(rawURL); err != nil {
		return nil, err
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = RedisTimeout, RedisTimeout, RedisTimeout, RedisTimeout
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	opts.DisableIdentity = true
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return &RedisStore{client: redis.NewClient(opts), namespace: namespace, timeout: RedisTimeout}, nil
}

// Use implements UsedStore.
func (r *RedisStore) Use(ctx context.Context, id string, until time.Time) (bool, error) {
	ttl := time.Until(until)
	if ttl <= 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	ok, err := r.client.SetNX(ctx, r.namespace+":rs:"+id, 1, ttl).Result()
	if err != nil {
		return false, errors.New("the request_state store (Redis) did not answer")
	}
	return ok, nil
}

// Close closes the connections.
func (r *RedisStore) Close() error { return r.client.Close() }

func init() {
	config.RegisterValueCheck(config.CheckRequestStateStore, func(raw string) (msg, hint string) {
		if raw == "" {
			return "", ""
		}
		if err := CheckStoreURL(raw); err != nil {
			return "request_state " + err.Error(), "for example store: redis://redis:6379/0 (rediss:// for TLS); every replica names the same"
		}
		return "", ""
	})
}
