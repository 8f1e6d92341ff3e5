package security

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
)

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })

func serveFrom(h http.Handler, remote string, mutate func(*http.Request)) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
	req.RemoteAddr = remote
	if mutate != nil {
		mutate(req)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestNewRejectsBadConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"bad cidr", Config{TrustedProxies: []string{"10.0.0.0/33"}}, "trusted_proxies[0]"},
		{"not an ip", Config{TrustedProxies: []string{"127.0.0.1", "gateway.local"}}, `trusted_proxies[1]: "gateway.local" is not an IP address`},
		{"empty key", Config{APIKeys: []string{"a", ""}}, "api_keys[1] is empty"},
		{"negative rate", Config{RateLimit: -1}, "rate_limit must be >= 0"},
		{"origin with path", Config{CORSOrigins: []string{"http://localhost:3000/app"}}, "cors_origins[0]"},
		{"origin without scheme", Config{CORSOrigins: []string{"localhost:3000"}}, "cors_origins[0]"},
		{"empty blocked tool", Config{BlockedTools: []string{" "}}, "blocked_tools[0] is empty"},
		{"oauth without audience", Config{Auth: &OAuthConfig{Issuer: "https://i", JWKSURL: "https://i/jwks"}}, "auth.audience is required"},
		{"oauth bad jwks url", Config{Auth: &OAuthConfig{Issuer: "https://i", Audience: "a", JWKSURL: "file:///jwks"}}, "auth.jwks_url"},
		{"oauth no issuer", Config{Auth: &OAuthConfig{Audience: "a", JWKSURL: "https://i/jwks"}}, "auth.issuer is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.ServerID = "srv"
			s, err := New(tc.cfg)
			if err == nil {
				s.Close()
				t.Fatal("New accepted a bad config")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `mcp server "srv"`) {
				t.Errorf("error %q does not mention %q and the server", err, tc.want)
			}
		})
	}
	// All problems are reported at once.
	_, err := New(Config{TrustedProxies: []string{"x"}, RateLimit: -5, APIKeys: []string{""}})
	if err == nil || strings.Count(err.Error(), "\n") < 2 {
		t.Errorf("want three errors joined, got %v", err)
	}
}

func TestClientIdentity(t *testing.T) {
	s := mustStack(t, Config{TrustedProxies: []string{"10.0.0.1", "192.168.0.0/16", "::1"}}, nil)
	cases := []struct {
		name, remote, xff string
		client            string
		trusted           bool
	}{
		{"direct client", "203.0.113.5:4000", "", "203.0.113.5", false},
		{"untrusted peer's header ignored", "203.0.113.5:4000", "1.2.3.4", "203.0.113.5", false},
		{"trusted proxy", "10.0.0.1:5000", "198.51.100.9", "198.51.100.9", true},
		{"chain of trusted proxies", "10.0.0.1:5000", "198.51.100.9, 192.168.3.4", "198.51.100.9", true},
		{"client-forged prefix ignored", "10.0.0.1:5000", "6.6.6.6, 198.51.100.9", "198.51.100.9", true},
		{"proxy without header", "10.0.0.1:5000", "", "10.0.0.1", true},
		{"only proxies in chain", "10.0.0.1:5000", "192.168.1.1", "192.168.1.1", true},
		{"garbage hop stops the walk", "10.0.0.1:5000", "198.51.100.9, garbage", "10.0.0.1", true},
		{"ipv6 loopback proxy", "[::1]:80", "2001:db8::7", "2001:db8::7", true},
		{"ipv4-mapped peer", "[::ffff:10.0.0.1]:80", "198.51.100.1", "198.51.100.1", true},
		{"hop with port", "10.0.0.1:5000", "198.51.100.9:1234", "198.51.100.9", true},
		{"unix socket peer", "@", "1.2.3.4", "unknown", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = tc.remote
			if tc.xff != "" {
				req.Header.Set("X-Forwarded-For", tc.xff)
			}
			q := s.identify(req)
			if q.clientString() != tc.client || q.viaTrusted != tc.trusted {
				t.Errorf("client %s trusted %v, want %s %v", q.clientString(), q.viaTrusted, tc.client, tc.trusted)
			}
		})
	}
}

func TestToolAllowed(t *testing.T) {
	s := mustStack(t, Config{
		AllowedTools: []string{"code-assistant", "math.agent", "both"},
		BlockedTools: []string{"admin_tool", "both"},
	}, nil)
	ctx := context.Background()
	cases := []struct {
		tool string
		want error
		msg  string
	}{
		{"code-assistant", nil, ""},
		{"code_assistant", nil, ""}, // sanitized name of an allowed id
		{"math_agent", nil, ""},
		{"admin-tool", ErrToolBlocked, "tool admin-tool is blocked"}, // raw id of a blocked name
		{"admin_tool", ErrToolBlocked, "tool admin_tool is blocked"},
		{"both", ErrToolBlocked, "tool both is blocked"}, // blocked wins
		{"summarizer", ErrToolNotAllowed, "tool summarizer is not allowed on this server"},
	}
	for _, tc := range cases {
		err := s.ToolAllowed(tc.tool, ctx)
		if !errors.Is(err, tc.want) || (err != nil && err.Error() != tc.msg) {
			t.Errorf("ToolAllowed(%q) = %v, want %v %q", tc.tool, err, tc.want, tc.msg)
		}
	}
	open := mustStack(t, Config{}, nil)
	if err := open.ToolAllowed("anything", ctx); err != nil {
		t.Errorf("no lists: %v", err)
	}
	// Scopes fail closed when the context carries no token.
	oauth := mustStack(t, Config{Auth: &OAuthConfig{Issuer: "https://i", Audience: "a", JWKSURL: "https://i/jwks",
		Scopes: map[string][]string{"admin.tool": {"admin"}}}}, nil)
	if err := oauth.ToolAllowed("admin_tool", ctx); !errors.Is(err, ErrInsufficientScope) {
		t.Errorf("scoped tool without token: %v", err)
	}
	if err := oauth.ToolAllowed("admin_tool", context.WithValue(ctx, claimsKey{}, &Claims{Scopes: []string{"admin"}})); err != nil {
		t.Errorf("scoped tool with scope: %v", err)
	}
	if err := oauth.ToolAllowed("other", ctx); err != nil {
		t.Errorf("unscoped tool: %v", err)
	}
	star := mustStack(t, Config{Auth: &OAuthConfig{Issuer: "https://i", Audience: "a", JWKSURL: "https://i/jwks",
		Scopes: map[string][]string{"*": {"mcp"}, "admin-tool": {"admin"}}}}, nil)
	withScopes := func(sc ...string) context.Context {
		return context.WithValue(ctx, claimsKey{}, &Claims{Scopes: sc})
	}
	if err := star.ToolAllowed("other", withScopes("read")); err == nil || err.Error() != "tool other requires scope mcp" {
		t.Errorf(`"*" scope not required: %v`, err)
	}
	if err := star.ToolAllowed("other", withScopes("mcp")); err != nil {
		t.Errorf(`"*" scope present: %v`, err)
	}
	if err := star.ToolAllowed("admin_tool", withScopes("mcp")); err == nil || err.Error() != "tool admin_tool requires scope admin" {
		t.Errorf("tool scope on top of \"*\": %v", err)
	}
	if err := star.ToolAllowed("admin_tool", withScopes("admin", "mcp")); err != nil {
		t.Errorf("both scopes present: %v", err)
	}
}

func TestTrustedProxySkipsAuthButNotOthers(t *testing.T) {
	clock := newFakeClock()
	s := mustStack(t, Config{APIKeys: []string{"k"}, TrustedProxies: []string{"10.0.0.1"}, RateLimit: 1, MaxBodyBytes: 10}, clock)
	h := s.Middleware(okHandler)
	if rec := serveFrom(h, "10.0.0.1:1", func(r *http.Request) { r.Header.Set("X-Forwarded-For", "198.51.100.1") }); rec.Code != 200 {
		t.Fatalf("proxy: %d", rec.Code)
	}
	// Clients behind the proxy are limited one by one.
	if rec := serveFrom(h, "10.0.0.1:1", func(r *http.Request) { r.Header.Set("X-Forwarded-For", "198.51.100.1") }); rec.Code != 429 {
		t.Errorf("same forwarded client: %d, want 429", rec.Code)
	}
	if rec := serveFrom(h, "10.0.0.1:1", func(r *http.Request) { r.Header.Set("X-Forwarded-For", "198.51.100.2") }); rec.Code != 200 {
		t.Errorf("other forwarded client: %d, want 200", rec.Code)
	}
	// The body limit still applies.
	big := func(r *http.Request) { r.Body = http.NoBody; r.ContentLength = 11 }
	if rec := serveFrom(h, "10.0.0.1:1", big); rec.Code != 413 {
		t.Errorf("proxy oversize: %d", rec.Code)
	}
}

// Many goroutines hammering one key must get exactly the bucket's size: the
// bucket is created once and shared, and no refill happens (frozen clock).
func TestRateLimitConcurrentExact(t *testing.T) {
	const limit, workers, perWorker = 50, 64, 10
	clock := newFakeClock()
	s := mustStack(t, Config{APIKeys: []string{"shared-key"}, RateLimit: limit}, clock)
	h := s.Middleware(okHandler)
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			for range perWorker {
				rec := serveFrom(h, fmt.Sprintf("127.0.0.%d:1", w+1), func(r *http.Request) { r.Header.Set("X-API-Key", "shared-key") })
				switch rec.Code {
				case 200:
					ok.Add(1)
				case 429:
					limited.Add(1)
				default:
					t.Errorf("status %d", rec.Code)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if ok.Load() != limit || limited.Load() != workers*perWorker-limit {
		t.Errorf("allowed %d, limited %d; want exactly %d allowed", ok.Load(), limited.Load(), limit)
	}
}

// A flood of distinct addresses must not grow the bucket map past its cap,
// and the most recent clients keep their state.
func TestRateLimitBucketsBounded(t *testing.T) {
	const capacity, clients = 1000, 100_000
	clock := newFakeClock()
	s := mustStack(t, Config{RateLimit: 5}, clock, func(o *options) { o.maxBuckets = capacity })
	h := s.Middleware(okHandler)
	for i := range clients {
		addr := fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255)
		if rec := serveFrom(h, addr, nil); rec.Code != 200 {
			t.Fatalf("client %d: status %d", i, rec.Code)
		}
		if i%997 == 0 {
			if n := s.limiter.size(); n > capacity {
				t.Fatalf("after %d clients the map holds %d buckets, cap %d", i+1, n, capacity)
			}
		}
	}
	if n := s.limiter.size(); n != capacity {
		t.Fatalf("map holds %d buckets, want exactly the cap %d", n, capacity)
	}
	// The newest client still has its (partly used) bucket.
	last := fmt.Sprintf("10.%d.%d.%d:1", (clients-1)>>16&255, (clients-1)>>8&255, (clients-1)&255)
	for range 4 {
		serveFrom(h, last, nil)
	}
	if rec := serveFrom(h, last, nil); rec.Code != 429 {
		t.Errorf("recent client lost its bucket: %d", rec.Code)
	}
	// Idle buckets go on the next sweep.
	clock.Advance(11 * time.Minute)
	s.limiter.sweep(clock.Now())
	if n := s.limiter.size(); n != 0 {
		t.Errorf("after sweep %d buckets remain", n)
	}
}

// The janitor goroutine sweeps on its own and stops on Close (goleak in
// TestMain checks that nothing is left running).
func TestJanitorSweepsAndStops(t *testing.T) {
	clock := newFakeClock()
	s := mustStack(t, Config{RateLimit: 10}, clock, func(o *options) { o.sweepInterval = 5 * time.Millisecond })
	h := s.Middleware(okHandler)
	serveFrom(h, "192.0.2.1:1", nil)
	serveFrom(h, "192.0.2.2:1", nil)
	clock.Advance(5 * time.Minute)
	serveFrom(h, "192.0.2.3:1", nil) // recent: survives
	clock.Advance(6 * time.Minute)
	deadline := time.Now().Add(testtools.StartupBound)
	for s.limiter.size() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("janitor did not sweep: %d buckets", s.limiter.size())
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Close()
	s.Close() // idempotent
	if rec := serveFrom(h, "192.0.2.4:1", nil); rec.Code != 200 {
		t.Errorf("middleware after Close: %d", rec.Code)
	}
}

func TestNoAuthConfiguredIgnoresPresentedKeys(t *testing.T) {
	// Without api_keys a presented key must not select a fresh bucket.
	clock := newFakeClock()
	s := mustStack(t, Config{RateLimit: 1}, clock)
	h := s.Middleware(okHandler)
	serveFrom(h, "192.0.2.1:1", nil)
	if rec := serveFrom(h, "192.0.2.1:1", func(r *http.Request) { r.Header.Set("X-API-Key", "random") }); rec.Code != 429 {
		t.Errorf("random key escaped the IP bucket: %d", rec.Code)
	}
}

func TestMatchKeyConstantTimeShape(t *testing.T) {
	s := mustStack(t, Config{APIKeys: []string{"a", "b", "c"}}, nil)
	for i, k := range []string{"a", "b", "c"} {
		if got := s.matchKey(k); got != i {
			t.Errorf("matchKey(%q) = %d, want %d", k, got, i)
		}
	}
	for _, k := range []string{"", "d", "ab", strings.Repeat("a", 1000)} {
		if got := s.matchKey(k); got != -1 {
			t.Errorf("matchKey(%q) = %d, want -1", k, got)
		}
	}
}

func BenchmarkRateLimitDistinctClients(b *testing.B) {
	s, err := newStack(Config{RateLimit: 60}, func() options { o := defaultOptions(); o.maxBuckets = 10_000; return o }())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.limiter.allow(fmt.Sprintf("ip:10.%d.%d.%d", i>>16&255, i>>8&255, i&255), now)
		i++
	}
	if n := s.limiter.size(); n > 10_000 {
		b.Fatalf("map grew to %d", n)
	}
}

func BenchmarkMiddlewareAPIKey(b *testing.B) {
	s, err := New(Config{APIKeys: []string{"k1", "k2", "k3"}, RateLimit: 1 << 30, Logger: nil})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	h := s.Middleware(okHandler)
	b.ReportAllocs()
	for b.Loop() {
		serveFrom(h, "192.0.2.1:1", func(r *http.Request) { r.Header.Set("X-API-Key", "k3") })
	}
}

func TestDNSRebindingGuard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		proxies []string
		host    string
		want    int
	}{
		{"loopback host", nil, "", 200},
		{"localhost name", nil, "localhost:1234", 200},
		{"rebound domain", nil, "attacker.example:1234", 403},
		{"rebound domain via trusted proxy", []string{"127.0.0.1", "::1"}, "mcp.example.com", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustStack(t, Config{TrustedProxies: tc.proxies}, nil)
			ts := httptest.NewServer(s.Middleware(okHandler))
			defer ts.Close()
			req, _ := http.NewRequest(http.MethodGet, ts.URL, nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			if resp, _ := do(t, req); resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}
