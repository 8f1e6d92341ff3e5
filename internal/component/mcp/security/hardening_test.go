package security

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/arvenza/helix/internal/testtools"
)

func withKey(k string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("X-API-Key", k) }
}

// Failed authentication is limited per client address: after the limit, the
// client gets 429 with Retry-After before its key is even looked at, other
// clients are not affected, and the window ends.
func TestAuthFailuresAreRateLimited(t *testing.T) {
	clock := newFakeClock()
	logs := &logBuffer{}
	s := mustStack(t, Config{APIKeys: []string{"good"}, Logger: logs.logger()}, clock)
	h := s.Middleware(okHandler)
	const attacker = "203.0.113.7:4000"

	for i := range DefaultAuthFailureLimit {
		if rec := serveFrom(h, attacker, withKey("guess-"+strconv.Itoa(i))); rec.Code != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i, rec.Code)
		}
	}
	for i, mutate := range []func(*http.Request){withKey("guess-x"), withKey("good"), nil} {
		rec := serveFrom(h, attacker, mutate)
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("request %d after the limit: %d, want 429", i, rec.Code)
		}
		secs, err := strconv.Atoi(rec.Header().Get("Retry-After"))
		if err != nil || secs < 1 || secs > int(DefaultAuthFailureWindow/time.Second) {
			t.Fatalf("Retry-After %q", rec.Header().Get("Retry-After"))
		}
	}
	// Another client is not affected, a valid key of it works.
	if rec := serveFrom(h, "198.51.100.2:1", withKey("good")); rec.Code != http.StatusOK {
		t.Fatalf("other client: %d", rec.Code)
	}
	// Once the window has passed the attacker's own valid key works again.
	clock.Advance(DefaultAuthFailureWindow + time.Second)
	if rec := serveFrom(h, attacker, withKey("good")); rec.Code != http.StatusOK {
		t.Fatalf("after the window: %d", rec.Code)
	}
	// Hundreds of failures leave a handful of log lines: the first of the window,
	// the lockout with its count, not one warning each.
	for i := range 500 {
		serveFrom(h, attacker, withKey("more-"+strconv.Itoa(i)))
	}
	warn := strings.Count(logs.String(), "level=WARN")
	if warn > 4 {
		t.Errorf("%d warnings for 500 failures:\n%s", warn, logs.String())
	}
	if !strings.Contains(logs.String(), "too many failed authentications") {
		t.Errorf("no lockout line:\n%s", logs.String())
	}
	// The rejections are all counted.
	var n uint64
	for _, rc := range s.Rejections() {
		n += rc.Count
	}
	if n < 500 {
		t.Errorf("counted %d rejections, want >= 500", n)
	}
}

func TestAuthFailureLimitIsConfigurable(t *testing.T) {
	clock := newFakeClock()
	s := mustStack(t, Config{APIKeys: []string{"good"}, AuthFailureLimit: 3, AuthFailureWindow: 10 * time.Second}, clock)
	h := s.Middleware(okHandler)
	for range 3 {
		serveFrom(h, "203.0.113.7:1", withKey("bad"))
	}
	rec := serveFrom(h, "203.0.113.7:1", withKey("bad"))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "10" {
		t.Fatalf("4th failure: %d Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}

	logs := &logBuffer{}
	off := mustStack(t, Config{APIKeys: []string{"good"}, AuthFailureLimit: -1, Logger: logs.logger()}, clock)
	h = off.Middleware(okHandler)
	for i := range 100 {
		if rec := serveFrom(h, "203.0.113.7:1", withKey("bad")); rec.Code != http.StatusUnauthorized {
			t.Fatalf("limit off, failure %d: %d", i, rec.Code)
		}
	}
	// The log is sampled all the same.
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("limit off: %d warnings for 100 failures, want 1", n)
	}
	if _, err := New(Config{APIKeys: []string{"k"}, AuthFailureLimit: -2}); err == nil {
		t.Error("auth_failure_limit -2 accepted")
	}
	if _, err := New(Config{APIKeys: []string{"k"}, AuthFailureWindow: -time.Second}); err == nil {
		t.Error("negative auth_failure_window accepted")
	}
}

// Trusted proxies are never refused for credentials, so they never count failures.
func TestAuthFailuresThroughTrustedProxyAreNotLimited(t *testing.T) {
	s := mustStack(t, Config{APIKeys: []string{"good"}, TrustedProxies: []string{"10.0.0.1"}, AuthFailureLimit: 2}, newFakeClock())
	h := s.Middleware(okHandler)
	for i := range 10 {
		if rec := serveFrom(h, "10.0.0.1:1", withKey("bad")); rec.Code != http.StatusOK {
			t.Fatalf("proxied request %d: %d", i, rec.Code)
		}
	}
}

// IPv6 clients are one client per /64: an attacker with a /64 (the smallest
// allocation a host gets) cannot mint fresh buckets by changing addresses.
func TestIPv6ClientsAreLimitedPerSlash64(t *testing.T) {
	clock := newFakeClock()
	s := mustStack(t, Config{RateLimit: 2}, clock)
	h := s.Middleware(okHandler)
	for i, remote := range []string{"[2001:db8:1:2::1]:1", "[2001:db8:1:2:ffff::9]:2"} {
		if rec := serveFrom(h, remote, nil); rec.Code != http.StatusOK {
			t.Fatalf("request %d: %d", i, rec.Code)
		}
	}
	if rec := serveFrom(h, "[2001:db8:1:2:abcd::7]:3", nil); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("third address of the same /64: %d, want 429", rec.Code)
	}
	if rec := serveFrom(h, "[2001:db8:1:3::1]:1", nil); rec.Code != http.StatusOK {
		t.Fatalf("another /64: %d", rec.Code)
	}
	// IPv4 clients stay one per address.
	for _, remote := range []string{"192.0.2.1:1", "192.0.2.1:2", "192.0.2.2:1"} {
		if rec := serveFrom(h, remote, nil); rec.Code != http.StatusOK && remote != "192.0.2.1:2" {
			t.Fatalf("%s: %d", remote, rec.Code)
		}
	}

	auth := mustStack(t, Config{APIKeys: []string{"good"}, AuthFailureLimit: 3}, clock)
	h = auth.Middleware(okHandler)
	for i := range 3 {
		serveFrom(h, fmt.Sprintf("[2001:db8:9:9::%x]:1", i+1), withKey("bad"))
	}
	if rec := serveFrom(h, "[2001:db8:9:9::99]:1", withKey("good")); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("auth failures spread over a /64: %d, want 429", rec.Code)
	}
}

// slowJWKS serves the issuer's keys until stall is set; then every fetch hangs
// until the test ends.
type slowJWKS struct {
	is      *issuer
	stall   atomic.Bool
	hits    atomic.Int32
	stalled atomic.Int32
	release chan struct{}
	once    sync.Once
	srv     *httptest.Server
}

// unstall answers the hanging fetches (with an empty body) and serves keys again.
func (j *slowJWKS) unstall() {
	j.stall.Store(false)
	j.once.Do(func() { close(j.release) })
}

func newSlowJWKS(t *testing.T, is *issuer) *slowJWKS {
	j := &slowJWKS{is: is, release: make(chan struct{})}
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.hits.Add(1)
		if j.stall.Load() {
			j.stalled.Add(1)
			select {
			case <-j.release:
			case <-r.Context().Done():
			}
			return
		}
		is.serveJWKS(w, r)
	}))
	t.Cleanup(func() {
		j.unstall()
		j.srv.Close()
	})
	return j
}

// A slow JWKS endpoint and tokens with unknown kids must not stall valid tokens:
// no lock is held across a fetch, refreshes are single-flight, unknown kids wait
// a bounded time and are then remembered.
func TestJWKSSlowEndpointDoesNotStallValidTokens(t *testing.T) {
	clock := newFakeClock()
	is := newIssuer(t)
	is.addRSA("good")
	j := newSlowJWKS(t, is)
	// The failed-authentication limit would soon answer the forged tokens itself.
	// The HTTP client has no timeout: the hanging fetch lasts until the test ends
	// it, so anything that waits for it waits beyond the test's bounds.
	s := mustStack(t, Config{Auth: &OAuthConfig{Issuer: testIssuer, Audience: testAudience, JWKSURL: j.srv.URL}, AuthFailureLimit: -1},
		clock, func(o *options) { o.jwksMaxWait = 200 * time.Millisecond; o.httpClient = &http.Client{} })
	h := s.Middleware(okHandler)
	serve := func(tok string) int {
		return serveFrom(h, "192.0.2.1:1", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }).Code
	}
	if code := serve(is.token("good", clock.Now(), nil)); code != http.StatusOK {
		t.Fatalf("first token: %d", code)
	}

	// From now on the endpoint hangs; a token with a random kid starts a refresh.
	j.stall.Store(true)
	clock.Advance(jwksMinRefresh + time.Second)
	forged := func(kid string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": testIssuer, "aud": testAudience, "sub": "x",
			"exp": clock.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = kid
		is.mu.Lock()
		k := is.keys["good"]
		is.mu.Unlock()
		str, err := tok.SignedString(k)
		if err != nil {
			t.Fatal(err)
		}
		return str
	}
	var wg sync.WaitGroup
	unknown := make(chan int, 8)
	for i := range 8 {
		wg.Go(func() { unknown <- serve(forged(fmt.Sprintf("random-%d", i))) })
	}
	// Valid tokens are answered while the refresh hangs. (If a lock were held
	// across the fetch they would hang until the test's cleanup.)
	for deadline := time.Now().Add(testtools.StartupBound); j.stalled.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no refresh started")
		}
	}
	done := make(chan int, 1)
	go func() {
		for range 20 {
			if code := serve(is.token("good", clock.Now(), nil)); code != http.StatusOK {
				done <- code
				return
			}
		}
		done <- http.StatusOK
	}()
	select {
	case code := <-done:
		if code != http.StatusOK {
			t.Fatalf("valid token during the stalled refresh: %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("valid tokens stalled behind the JWKS refresh")
	}
	// Unknown kids give up after the bounded wait (the fetch still hangs).
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatal("tokens with unknown kids waited without bound")
	}
	close(unknown)
	for code := range unknown {
		if code != http.StatusUnauthorized {
			t.Errorf("unknown kid: %d, want 401", code)
		}
	}
	// One refresh for all of them.
	if n := j.stalled.Load(); n != 1 {
		t.Errorf("%d concurrent refreshes, want 1 (single flight)", n)
	}

	// Let the refresh finish: the random kids are not in it, and are then
	// refused at once without another fetch (negative cache), even once the
	// refresh throttle would allow one.
	j.unstall()
	deadline := time.Now().Add(testtools.StartupBound)
	for {
		s.oauth.jwks.mu.Lock()
		busy := s.oauth.jwks.inflight != nil
		s.oauth.jwks.mu.Unlock()
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the refresh did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The stalled fetch ended without keys; a later fetch (after the throttle)
	// brings them, and an unknown kid found unknown after it is remembered.
	clock.Advance(jwksMinRefresh + time.Second)
	if code := serve(forged("random-again")); code != http.StatusUnauthorized {
		t.Fatalf("unknown kid: %d", code)
	}
	hits := j.hits.Load()
	clock.Advance(jwksMinRefresh + time.Second)
	for range 5 {
		if code := serve(forged("random-again")); code != http.StatusUnauthorized {
			t.Fatalf("remembered unknown kid: %d", code)
		}
	}
	if n := j.hits.Load(); n != hits {
		t.Errorf("a remembered unknown kid caused %d more fetches", n-hits)
	}
}

// Closing the stack ends a running JWKS fetch (no goroutine outlives the stack).
func TestJWKSFetchEndsWithTheStack(t *testing.T) {
	is := newIssuer(t)
	is.addRSA("good")
	j := newSlowJWKS(t, is)
	j.stall.Store(true)
	s, err := newStack(Config{Auth: &OAuthConfig{Issuer: testIssuer, Audience: testAudience, JWKSURL: j.srv.URL}},
		func() options { o := defaultOptions(); o.jwksMaxWait = 50 * time.Millisecond; return o }())
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.oauth.verify(context.Background(), is.token("good", time.Now(), nil))
	if err == nil || !errors.Is(err, errJWKSPending) {
		t.Fatalf("verify during a hanging first fetch: %v", err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for the hanging fetch")
	}
}
