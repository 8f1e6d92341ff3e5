package redislimit

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/arvenza/helix/internal/config"
)

// The YAML model (internal/config) holds an mcps: entry's rate_limit_store as a
// string; what a store URL must look like is this package's knowledge, checked
// when the file is loaded, at the value's position.
func init() {
	config.RegisterValueCheck(config.CheckRateLimitStore, func(raw string) (msg, hint string) {
		if msg := checkRedisURL(raw); msg != "" {
			return msg, redisURLHint
		}
		return "", ""
	})
}

// redisURLHint says what rate_limit_store accepts.
const redisURLHint = "write redis://[user:password@]host[:port][/db] (rediss:// for TLS), for example redis://:${env:REDIS_PASSWORD}@redis:6379/0; the port defaults to 6379 and the database to 0"

// checkRedisURL says what is wrong with a rate_limit_store URL, or "". The URL may
// hold a password, so no message quotes it.
func checkRedisURL(raw string) string {
	if strings.TrimSpace(raw) == "" {
		return "the URL is empty (is the ${env:...} variable unset?)"
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the URL, which may hold a password.
		return "the value does not parse as a URL"
	}
	switch u.Scheme {
	case "redis", "rediss":
	case "":
		return "the URL has no scheme"
	default:
		return "the store must be a redis:// or rediss:// URL, not " + u.Scheme + "://"
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return "the URL names no host"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "the port " + strconv.Quote(p) + " is not a number from 1 to 65535"
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "the URL has an empty port"
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return "the path " + strconv.Quote(u.Path) + " is not a database number (/0, /1 …)"
		}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "the URL has a query or fragment; Helix sets the timeouts itself and accepts no options"
	}
	return ""
}
