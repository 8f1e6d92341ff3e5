package security

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/arvenza/helix/internal/component/mcp/security/redislimit"
	"github.com/arvenza/helix/internal/testtools"
)

// storeBackends are the Redis servers the shared-store tests run against: an
// in-process miniredis (fast, always there) and Debian's redis-server (the real
// Lua interpreter and number formatting; skipped when missing unless
// HELIX_REQUIRE_TOOLS=1).
var storeBackends = []struct {
	name  string
	start func(t *testing.T) string // returns a redis:// URL
}{
	{"miniredis", func(t *testing.T) string { return "redis://" + miniredis.RunT(t).Addr() + "/0" }},
	{"redis-server", func(t *testing.T) string { return testtools.StartRedis(t).URL }},
}

// The script's refill arithmetic is the in-process limiter's: both are driven by
// one fake clock through the same requests, and every answer (allowed or not,
// and the wait) must agree.
func TestSharedBucketMatchesMemoryLimiter(t *testing.T) {
	for _, be := range storeBackends {
		t.Run(be.name, func(t *testing.T) {
			url := be.start(t)
			for _, perMinute := range []int{1, 3, 7, 60, 61, 250} {
				t.Run(fmt.Sprint(perMinute), func(t *testing.T) {
					compareWithMemory(t, url, perMinute)
				})
			}
		})
	}
}

func compareWithMemory(t *testing.T, url string, perMinute int) {
	clock := newFakeClock()
	clock.t = clock.t.Truncate(time.Microsecond) // the script's clock is in microseconds
	mem := newLimiterStore(perMinute, 100, time.Hour, clock.Now)
	shared, err := redislimit.New(redislimit.Options{URL: url, PerMinute: perMinute,
		Namespace: fmt.Sprintf("test:%d:%d:", perMinute, time.Now().UnixNano()), Timeout: 10 * time.Second, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	interval := (time.Minute / time.Duration(perMinute)).Truncate(time.Microsecond) // about one token's refill
	rng := rand.New(rand.NewPCG(uint64(perMinute), 7))
	// Steps drain a bucket, wait fractions and multiples of a token's refill,
	// go back in time (a clock step), and switch between two clients.
	steps := []time.Duration{0, 0, 0, time.Microsecond, (interval / 3).Truncate(time.Microsecond), (interval / 2).Truncate(time.Microsecond), interval, 2 * interval, 61 * time.Second, -interval, 7 * time.Millisecond}
	// First the burst and beyond it at one instant, then random steps.
	for i := range 2*perMinute + 300 {
		if i > perMinute+2 {
			clock.Advance(steps[rng.IntN(len(steps))])
		}
		key := "ip:192.0.2.1"
		if rng.IntN(5) == 0 {
			key = "key#1"
		}
		wantOK, wantWait, _ := mem.Allow(context.Background(), key)
		gotOK, gotWait, err := shared.Allow(context.Background(), key)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if gotOK != wantOK || gotWait != wantWait {
			t.Fatalf("step %d (%s): store answered (%v, %s), memory (%v, %s)", i, key, gotOK, gotWait, wantOK, wantWait)
		}
	}
}

// In production the script reads the Redis server's clock, not the replica's: a
// bucket refills when the server's time moves, whatever the caller's clock says.
func TestSharedBucketUsesServerTime(t *testing.T) {
	m := miniredis.RunT(t)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m.SetTime(start)
	shared, err := redislimit.New(redislimit.Options{URL: "redis://" + m.Addr(), PerMinute: 2, Namespace: "helix:ratelimit:s:"})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	allow := func() (bool, time.Duration) {
		t.Helper()
		ok, wait, err := shared.Allow(context.Background(), "ip:192.0.2.9")
		if err != nil {
			t.Fatal(err)
		}
		return ok, wait
	}
	for i := range 2 {
		if ok, _ := allow(); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	if ok, wait := allow(); ok || wait != 30*time.Second {
		t.Fatalf("third request: ok=%v wait=%s, want refused for 30s (2/min)", ok, wait)
	}
	m.SetTime(start.Add(29 * time.Second))
	if ok, wait := allow(); ok || retryAfterSeconds(wait) != 1 {
		t.Fatalf("after 29s of server time: ok=%v wait=%s, want refused for about 1s", ok, wait)
	}
	m.SetTime(start.Add(30 * time.Second))
	if ok, _ := allow(); !ok {
		t.Fatal("after 30s of server time the refilled token was refused")
	}
	// The key is namespaced and expires once the bucket would be full again
	// (60s from empty at any rate, plus a second).
	ttl := m.TTL("helix:ratelimit:s:ip:192.0.2.9")
	if ttl <= 0 || ttl > 61*time.Second {
		t.Errorf("bucket key TTL = %s, want (0, 61s]", ttl)
	}
}

// Two stacks (two replicas) with one store share each client's budget: the
// limit+1st request across both is refused with the in-process limiter's own
// answer. Without the store each stack admits the whole limit.
func TestSharedStoreAcrossStacks(t *testing.T) {
	for _, be := range storeBackends {
		t.Run(be.name, func(t *testing.T) {
			url := be.start(t)
			const limit = 4
			clock := newFakeClock()
			cfg := Config{ServerID: "tools", APIKeys: []string{"k"}, RateLimit: limit, RateLimitStore: url}
			replicas := []*Stack{
				mustStack(t, cfg, clock, storeClock(clock)),
				mustStack(t, cfg, clock, storeClock(clock)),
			}
			for i := range limit {
				if code, _, body := rateProbe(t, replicas[i%2], "k"); code != 200 {
					t.Fatalf("request %d (replica %d): %d %s", i+1, i%2, code, body)
				}
			}
			alone := mustStack(t, Config{ServerID: "tools", APIKeys: []string{"k"}, RateLimit: limit}, clock)
			for range limit {
				rateProbe(t, alone, "k")
			}
			wantCode, wantRetry, wantBody := rateProbe(t, alone, "k")
			for i, s := range replicas {
				code, retry, body := rateProbe(t, s, "k")
				if code != wantCode || retry != wantRetry || body != wantBody {
					t.Errorf("replica %d after %d shared requests: %d Retry-After %q %q; in-process limiter: %d %q %q",
						i, limit, code, retry, body, wantCode, wantRetry, wantBody)
				}
			}
			if wantCode != http.StatusTooManyRequests || wantRetry != "15" {
				t.Errorf("in-process answer %d Retry-After %q, want 429 and 15 (4/min)", wantCode, wantRetry)
			}
			// One token refills on the store's clock; either replica may take it.
			clock.Advance(15 * time.Second)
			if code, _, _ := rateProbe(t, replicas[1], "k"); code != 200 {
				t.Errorf("after a token's refill: %d", code)
			}
			if code, _, _ := rateProbe(t, replicas[0], "k"); code != 429 {
				t.Errorf("the refilled token was given twice: %d", code)
			}
		})
	}
}

// A store that stops answering, or never answers, does not stall requests: they
// are decided by the fallback within the timeout, counted, and warned about
// (sampled, without the password).
func TestStoreUnavailable(t *testing.T) {
	hanging := hangingListener(t)
	for _, tc := range []struct {
		name     string
		fallback string
		wantCode int // the 2nd request of a client whose local bucket holds 1
	}{
		{"local fallback", "", 429},
		{"refuse", FallbackRefuse, 503},
	} {
		for _, down := range []struct {
			name string
			url  func(t *testing.T) string
		}{
			{"stopped redis-server", func(t *testing.T) string {
				r := testtools.StartRedis(t)
				r.Stop()
				return "redis://:s3cret-pw@" + r.Addr + "/0"
			}},
			{"hanging store", func(*testing.T) string { return "redis://:s3cret-pw@" + hanging + "/0" }},
		} {
			t.Run(tc.name+"/"+down.name, func(t *testing.T) {
				var logs logBuffer
				clock := newFakeClock()
				failures := &atomic.Uint64{}
				s := mustStack(t, Config{ServerID: "tools", APIKeys: []string{"k"}, RateLimit: 1, RateLimitStore: down.url(t),
					RateLimitStoreFallback: tc.fallback, RateLimitStoreFailures: failures, Logger: logs.logger()}, clock,
					func(o *options) { o.storeTimeout = 200 * time.Millisecond })
				start := time.Now()
				first, _, _ := rateProbe(t, s, "k")
				second, retry, _ := rateProbe(t, s, "k")
				if took := time.Since(start); took > 5*time.Second {
					t.Errorf("two requests took %s with the store down", took)
				}
				wantFirst := 200
				if tc.fallback == FallbackRefuse {
					wantFirst = 503
				}
				if first != wantFirst || second != tc.wantCode || retry == "" {
					t.Errorf("answers %d, %d (Retry-After %q), want %d, %d with Retry-After", first, second, retry, wantFirst, tc.wantCode)
				}
				if n := failures.Load(); n != 2 {
					t.Errorf("store failures counted: %d, want 2", n)
				}
				out := logs.String()
				if strings.Count(out, "rate limit store cannot decide") != 1 {
					t.Errorf("want one sampled warning, got:\n%s", out)
				}
				if strings.Contains(out, "s3cret-pw") {
					t.Errorf("the store's password was logged:\n%s", out)
				}
			})
		}
	}
}

// After the pause that follows a failure the store is asked again, and its
// answers count again.
func TestStoreRecovers(t *testing.T) {
	m := miniredis.RunT(t)
	var logs logBuffer
	clock := newFakeClock()
	s := mustStack(t, Config{ServerID: "tools", APIKeys: []string{"k"}, RateLimit: 2, RateLimitStore: "redis://" + m.Addr(),
		Logger: logs.logger()}, clock, storeClock(clock))
	m.SetError("LOADING Redis is loading the dataset in memory")
	if code, _, _ := rateProbe(t, s, "k"); code != 200 {
		t.Fatalf("local fallback refused the first request: %d", code)
	}
	m.SetError("")
	// Within the pause the store is not asked: the local bucket decides.
	if code, _, _ := rateProbe(t, s, "k"); code != 200 {
		t.Fatalf("second request: %d", code)
	}
	if code, _, _ := rateProbe(t, s, "k"); code != 429 {
		t.Fatalf("third request within the pause: %d, want the local bucket's 429", code)
	}
	clock.Advance(storePause)
	// The store's bucket for this client is untouched: two more.
	for i := range 2 {
		if code, _, _ := rateProbe(t, s, "k"); code != 200 {
			t.Fatalf("request %d after the pause: %d", i+1, code)
		}
	}
	if !strings.Contains(logs.String(), "rate limit store answers again") {
		t.Errorf("no recovery line:\n%s", logs.String())
	}
}

func TestStoreConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{RateLimit: 5, RateLimitStore: "http://:pw@host:6379"}, `redis:// or rediss:// URL, not "http://"`},
		{Config{RateLimit: 5, RateLimitStore: "redis://:pw@host:6379/x"}, "invalid database number"},
		{Config{RateLimit: 5, RateLimitStore: "redis://:pw@host:6379/0?dial_timeout=1s"}, "takes no query options"},
		{Config{RateLimit: 5, RateLimitStore: "redis://:pw@/0"}, "names no host"},
		{Config{RateLimitStore: "redis://:pw@host:6379/0?x=1"}, "takes no query options"},
		{Config{RateLimit: 5, RateLimitStore: "redis://host:6379", RateLimitStoreFallback: "open"}, "rate_limit_store_fallback must be local or refuse"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), ":pw@") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

func storeClock(c *fakeClock) func(*options) {
	return func(o *options) { o.storeClock = c.Now }
}

// rateProbe sends one authenticated request through s (to a handler that answers
// 200) and returns the status, Retry-After and body.
func rateProbe(t *testing.T, s *Stack, key string) (int, string, string) {
	t.Helper()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
	req.Header.Set("X-API-Key", key)
	rec := httptest.NewRecorder()
	s.Middleware(ok).ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Retry-After"), rec.Body.String()
}

// hangingListener accepts connections and never answers, like a Redis behind a
// dead network path; it is closed when the test ends.
func hangingListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var held []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().String()
}
