package redislimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Store is a Redis for limits other than the MCP server's per-client rate_limit:
// token buckets of any size and period ([Store.Take]) and fixed-window counters
// ([Store.Count]), such as the gateway's per-principal, per-tool rates and
// quotas. Replicas that use one Redis and one Namespace share every bucket and
// counter. Build it with [OpenStore]; its methods are safe for concurrent use.
type Store struct {
	client    *redis.Client
	namespace string
	timeout   time.Duration
	clock     func() time.Time
	redacted  string
}

// StoreOptions configure a [Store]; the fields mean what [Options]' do.
type StoreOptions struct {
	URL       string
	Namespace string
	Timeout   time.Duration
	Clock     func() time.Time
}

// OpenStore checks o and builds the store. It performs no I/O: the first call
// connects.
func OpenStore(o StoreOptions) (*Store, error) {
	opts, err := ParseURL(o.URL)
	if err != nil {
		return nil, err
	}
	client, timeout := newClient(opts, o.Timeout)
	return &Store{client: client, namespace: o.Namespace, timeout: timeout, clock: o.Clock, redacted: Redact(o.URL)}, nil
}

// Take takes one token from key's bucket, which holds n tokens and refills n per
// period (the arithmetic of golang.org/x/time/rate with a burst of n). ok reports
// whether one was left; if not, retryAfter is the wait until the next one. An
// error means the store did not decide.
func (s *Store) Take(ctx context.Context, key string, n int, per time.Duration) (ok bool, retryAfter time.Duration, err error) {
	if n <= 0 || per <= 0 {
		return false, 0, fmt.Errorf("a bucket needs n > 0 and a period > 0, got %d per %s", n, per)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	now := ""
	if s.clock != nil {
		now = strconv.FormatInt(s.clock().UnixMicro(), 10)
	}
	res, err := bucketScript.Run(ctx, s.client, []string{s.namespace + key}, strconv.Itoa(n), now,
		strconv.FormatFloat(per.Seconds(), 'g', 17, 64)).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("rate limit store %s: %w", s.redacted, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("rate limit store %s: the script answered %d values, want 2", s.redacted, len(res))
	}
	return res[0] == 1, time.Duration(res[1]), nil
}

// countScript adds one to the counter KEYS[1] and answers its new value; the
// counter is created to expire at ARGV[1] (unix milliseconds), the end of its
// window, so that a window's key never outlives it.
var countScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end
return n
`)

// Count adds one to the counter of key for the window that ends at end and
// returns how many it counted, this one included. Callers put the window in the
// key (its start), so that each window counts from zero.
func (s *Store) Count(ctx context.Context, key string, end time.Time) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	n, err := countScript.Run(ctx, s.client, []string{s.namespace + key}, strconv.FormatInt(end.UnixMilli(), 10)).Int64()
	if err != nil {
		return 0, fmt.Errorf("rate limit store %s: %w", s.redacted, err)
	}
	return n, nil
}

// String is the store's URL without its password.
func (s *Store) String() string { return s.redacted }

// Close closes the connections; calls fail afterwards.
func (s *Store) Close() error { return s.client.Close() }
