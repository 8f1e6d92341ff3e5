// Package redislimit keeps the rate-limit buckets of an MCP server in Redis, so that
// every replica of the server (same server id, same store) takes from one bucket
// per client instead of each counting alone.
//
// A bucket has the semantics of the in-process limiter (golang.org/x/time/rate):
// perMinute tokens a minute, a burst of perMinute, full when first seen. One Lua
// script reads, refills and takes a token atomically on the Redis server, with the
// server's clock (TIME), so replicas whose clocks are skewed still agree on the
// refill. go-redis's [redis.Script] sends it with EVALSHA and falls back to EVAL
// when the server has not cached it (a restart, SCRIPT FLUSH).
//
// Keys are "<namespace><client>" hashes that expire once the bucket would be full
// again: an absent key is a full bucket, so expiry changes no answer.
package redislimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// DefaultTimeout bounds one decision (connecting included) when Options.Timeout is 0.
// Redis answers a script like this in well under a millisecond on a LAN; a store
// slower than this is treated as down, so that it cannot stall requests.
const DefaultTimeout = 250 * time.Millisecond

// Options configure a [Limiter].
type Options struct {
	// URL is redis://[user:password@]host[:port][/db] or rediss:// for TLS. It
	// takes no query options: the timeouts are Timeout's.
	URL string
	// PerMinute is the bucket's refill per minute and its size (the burst); > 0.
	PerMinute int
	// Namespace prefixes every key, e.g. "helix:ratelimit:<server id>:".
	Namespace string
	// Timeout bounds one Allow call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Clock, when set, replaces the Redis server's clock. Only tests set it, to
	// drive the script and the in-process limiter with one fake clock; in
	// production the server's TIME keeps replicas with skewed clocks in step.
	Clock func() time.Time
}

// Limiter is one server's shared buckets. Build it with [New]; Allow is safe for
// concurrent use. Close releases the connection pool.
type Limiter struct {
	client    *redis.Client
	perMinute string
	namespace string
	timeout   time.Duration
	clock     func() time.Time
	redacted  string
}

// bucketScript takes one token from the bucket KEYS[1]. ARGV[1] is the limit per
// period (the refill per period and the burst), ARGV[2] the time in microseconds
// or "" for the server's clock, ARGV[3] the period in seconds (absent: a minute,
// the MCP server's rate_limit; [Store.Take] passes others). It answers {1, 0} when a token was taken and {0,
// wait} when none is left, wait being the nanoseconds until the next token.
//
// The arithmetic is golang.org/x/time/rate's (AllowN and TokensAt), operation for
// operation, so that the same times give the same answers to the last bit: tokens
// refill linearly from the last taking (elapsed seconds computed as
// time.Duration.Seconds does), capped at the burst; a clock that went back counts
// as no time passed; a refusal changes nothing; the wait is truncated to
// nanoseconds like time.Duration. Numbers passed to redis.call are written with
// 17 significant digits, so the stored state loses nothing (tostring would round
// to 14).
var bucketScript = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local burst = tonumber(ARGV[1])
local rate = burst / (tonumber(ARGV[3]) or 60)
local now
if ARGV[2] ~= '' then
  now = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local state = redis.call('HMGET', KEYS[1], 'tokens', 'last')
local tokens, last = tonumber(state[1]), tonumber(state[2])
if tokens == nil or last == nil then
  tokens, last = burst, now
end
if now < last then last = now end
local elapsed = now - last
local whole = math.floor(elapsed / 1000000)
tokens = tokens + (whole + (elapsed - whole * 1000000) * 1000 / 1e9) * rate
if tokens > burst then tokens = burst end
if tokens < 1 then
  return {0, math.floor((1 - tokens) / rate * 1e9)}
end
tokens = tokens - 1
redis.call('HSET', KEYS[1], 'tokens', tokens, 'last', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return {1, 0}
`)

// New checks o and builds the limiter. It performs no I/O: the first Allow
// connects.
func New(o Options) (*Limiter, error) {
	if o.PerMinute <= 0 {
		return nil, fmt.Errorf("rate limit must be > 0 requests per minute, got %d", o.PerMinute)
	}
	opts, err := ParseURL(o.URL)
	if err != nil {
		return nil, err
	}
	client, timeout := newClient(opts, o.Timeout)
	return &Limiter{
		client:    client,
		perMinute: strconv.Itoa(o.PerMinute),
		namespace: o.Namespace,
		timeout:   timeout,
		clock:     o.Clock,
		redacted:  Redact(o.URL),
	}, nil
}

// newClient makes the client of opts with every wait bounded by timeout (0:
// DefaultTimeout), which it returns.
func newClient(opts *redis.Options, timeout time.Duration) (*redis.Client, time.Duration) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// Every wait is bounded by the timeout, and a failed call is not retried: the
	// caller decides the request otherwise and the next request tries again.
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = timeout, timeout, timeout, timeout
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	opts.DisableIdentity = true // no CLIENT SETINFO round trip when connecting
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	quietDriver.Do(func() { redis.SetLogger(debugLogger{}) })
	return redis.NewClient(opts), timeout
}

// quietDriver routes go-redis's own log lines (one per failed dial: a line a
// second while a store is down) to slog's default logger at debug level. The
// driver's logger is process-wide; it is replaced once, when the first store is
// built. What an operator needs to know is the stack's sampled warning.
var quietDriver sync.Once

type debugLogger struct{}

func (debugLogger) Printf(ctx context.Context, format string, v ...any) {
	slog.Default().DebugContext(ctx, "redis driver: "+fmt.Sprintf(format, v...))
}

// ParseURL parses a rate_limit_store URL into go-redis options. Its errors never
// quote the URL, which may hold a password.
func ParseURL(raw string) (*redis.Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("rate_limit_store does not parse as a URL")
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("rate_limit_store must be a redis:// or rediss:// URL, not %q", u.Scheme+"://")
	}
	if u.Hostname() == "" {
		return nil, errors.New("rate_limit_store names no host")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("rate_limit_store takes no query options")
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("rate_limit_store %s: %w", Redact(raw), err)
	}
	return opts, nil
}

// Redact returns the URL with its password replaced by "xxxxx", for logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// Allow takes one token from key's bucket, within the timeout. ok reports whether
// one was left; if not, retryAfter is the wait until the next one. An error means
// the store did not decide (unreachable, slow, failing): the caller decides.
func (l *Limiter) Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	now := ""
	if l.clock != nil {
		now = strconv.FormatInt(l.clock().UnixMicro(), 10)
	}
	res, err := bucketScript.Run(ctx, l.client, []string{l.namespace + key}, l.perMinute, now).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("rate limit store %s: %w", l.redacted, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("rate limit store %s: the script answered %d values, want 2", l.redacted, len(res))
	}
	return res[0] == 1, time.Duration(res[1]), nil
}

// String is the store's URL without its password.
func (l *Limiter) String() string { return l.redacted }

// Close closes the connections; Allow fails afterwards.
func (l *Limiter) Close() error { return l.client.Close() }
