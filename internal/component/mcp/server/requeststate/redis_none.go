//go:build helix_noredis

package requeststate

import (
	"context"
	"errors"
	"time"

	"github.com/arvenza/helix/internal/config"
)

var errNoRedis = errors.New("this helix was built with -tags helix_noredis: a Redis request_state store is left out")

// RedisStore is left out of this build.
type RedisStore struct{}

// CheckStoreURL refuses every store in this build.
func CheckStoreURL(string) error { return errNoRedis }

// NewRedisStore refuses in this build.
func NewRedisStore(string, string) (*RedisStore, error) { return nil, errNoRedis }

// Use implements UsedStore.
func (*RedisStore) Use(context.Context, string, time.Time) (bool, error) { return false, errNoRedis }

// Close does nothing.
func (*RedisStore) Close() error { return nil }

func init() {
	config.RegisterValueCheck(config.CheckRequestStateStore, func(raw string) (msg, hint string) {
		if raw == "" {
			return "", ""
		}
		return "request_state store: " + errNoRedis.Error(), "use a helix built without -tags helix_noredis, or remove store: (each process then remembers its own used states)"
	})
}
