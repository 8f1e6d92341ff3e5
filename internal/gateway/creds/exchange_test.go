package creds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/testtools"
)

const stsSecret = "sts-client-secret-value"

// sts is a test token service: it checks each RFC 8693 request and answers with
// a token derived from the subject token, or with what answer says.
type sts struct {
	t        *testing.T
	srv      *httptest.Server
	requests atomic.Int32
	// answer, when set, writes the response instead.
	answer func(w http.ResponseWriter, subject string)
	// gate, when set, holds every request until it is closed.
	gate chan struct{}
	mu   sync.Mutex
	seen []string // problems with requests, reported by check
}

func newSTS(t *testing.T) *sts {
	s := &sts{t: t}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sts) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if s.gate != nil {
		<-s.gate
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	want := map[string]string{
		"grant_type":         "urn:ietf:params:oauth:grant-type:token-exchange",
		"subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"audience":           "https://api.upstream.test",
		"resource":           "https://api.upstream.test/mcp",
		"scope":              "read write",
	}
	for k, v := range want {
		if got := r.PostForm.Get(k); got != v {
			s.problem("%s = %q, want %q", k, got, v)
		}
	}
	if id, secret, ok := r.BasicAuth(); !ok || id != "helix-gateway" || secret != stsSecret {
		s.problem("client authentication: basic %v %q", ok, id)
	}
	subject := r.PostForm.Get("subject_token")
	if s.answer != nil {
		s.answer(w, subject)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"access_token": "exchanged-for-" + subject, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"token_type": "Bearer", "expires_in": 300,
	})
}

func (s *sts) problem(format string, args ...any) {
	s.mu.Lock()
	s.seen = append(s.seen, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

func (s *sts) check() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.seen {
		s.t.Error("token service got: " + p)
	}
}

// clock is a settable clock for the cache.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func exchangeConfig(tokenURL string) config.UpstreamConfig {
	return config.UpstreamConfig{
		ID: "tickets", URL: "https://api.upstream.test/mcp", Credentials: config.CredentialsExchange,
		Audience: "https://api.upstream.test",
		TokenExchange: &config.TokenExchangeConfig{
			TokenURL: tokenURL, ClientID: "helix-gateway", ClientSecret: stsSecret,
			Resource: "https://api.upstream.test/mcp", Scopes: []string{"read", "write"},
		},
	}
}

func newExchangeCreds(t *testing.T, s *sts, clk *clock) gateway.Credentials {
	t.Helper()
	opts := Options{ExpiryMargin: 30 * time.Second}
	if clk != nil {
		opts.Now = clk.Now
	}
	c, err := New(exchangeConfig(s.srv.URL+"/token"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func caller(token string) *gateway.Principal {
	return &gateway.Principal{ID: "sub:3:iss5:alice", Name: "alice", Token: token}
}

func TestExchangeSendsTheExchangedToken(t *testing.T) {
	t.Parallel()
	s := newSTS(t)
	c := newExchangeCreds(t, s, nil)
	h, err := c.Header(context.Background(), caller("alice-token-1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("Authorization"); got != "Bearer exchanged-for-alice-token-1" {
		t.Fatalf("Authorization = %q", got)
	}
	s.check()
}

func TestExchangeCachesUntilShortlyBeforeExpiry(t *testing.T) {
	t.Parallel()
	s := newSTS(t)
	clk := &clock{now: time.Now()}
	c := newExchangeCreds(t, s, clk)
	get := func(token string) {
		t.Helper()
		h, err := c.Header(context.Background(), caller(token))
		if err != nil {
			t.Fatal(err)
		}
		if h.Get("Authorization") != "Bearer exchanged-for-"+token {
			t.Fatalf("Authorization = %q for %s", h.Get("Authorization"), token)
		}
	}
	get("alice-token-1")
	get("alice-token-1")
	if n := s.requests.Load(); n != 1 {
		t.Fatalf("%d exchanges for one token, want 1 (cached)", n)
	}
	get("bob-token-1") // another subject token: its own exchange
	if n := s.requests.Load(); n != 2 {
		t.Fatalf("%d exchanges, want 2", n)
	}
	clk.Add(300*time.Second - 31*time.Second) // still before expiry minus the margin
	get("alice-token-1")
	if n := s.requests.Load(); n != 2 {
		t.Fatalf("%d exchanges, want 2 (still cached)", n)
	}
	clk.Add(2 * time.Second) // within the margin: exchanged again
	get("alice-token-1")
	if n := s.requests.Load(); n != 3 {
		t.Fatalf("%d exchanges, want 3 (expired from the cache)", n)
	}
	s.check()
}

func TestExchangeWithoutExpiresInIsNotCached(t *testing.T) {
	t.Parallel()
	s := newSTS(t)
	s.answer = func(w http.ResponseWriter, subject string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"x-%s","token_type":"N_A","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}`, subject)
	}
	c := newExchangeCreds(t, s, nil)
	for range 2 {
		if _, err := c.Header(context.Background(), caller("alice-token-1")); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.requests.Load(); n != 2 {
		t.Fatalf("%d exchanges, want 2: a token of unknown lifetime is not kept", n)
	}
}

func TestConcurrentCallsShareOneExchange(t *testing.T) {
	t.Parallel()
	s := newSTS(t)
	s.gate = make(chan struct{})
	c := newExchangeCreds(t, s, nil)
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := c.Header(context.Background(), caller("alice-token-1"))
			if err == nil && h.Get("Authorization") != "Bearer exchanged-for-alice-token-1" {
				err = fmt.Errorf("Authorization = %q", h.Get("Authorization"))
			}
			errs <- err
		}()
	}
	// The first request is held at the gate; once it arrives, the others are
	// waiting for it or will find the cache.
	testtools.Eventually(t, "the exchange request", func() bool { return s.requests.Load() > 0 })
	close(s.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := s.requests.Load(); got != 1 {
		t.Fatalf("%d exchanges for %d concurrent calls with one token, want 1", got, n)
	}
}

func TestACancelledCallDoesNotFailTheOthersWaiting(t *testing.T) {
	t.Parallel()
	s := newSTS(t)
	s.gate = make(chan struct{})
	c := newExchangeCreds(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.Header(ctx, caller("alice-token-1"))
		first <- err
	}()
	testtools.Eventually(t, "the exchange request", func() bool { return s.requests.Load() > 0 })
	second := make(chan error, 1)
	go func() {
		_, err := c.Header(context.Background(), caller("alice-token-1"))
		second <- err
	}()
	e := c.(*exchange)
	testtools.Eventually(t, "the second call waiting for the first one's exchange", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, f := range e.inflight {
			return f.waiters == 2
		}
		return false
	})
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	close(s.gate)
	if err := <-second; err != nil {
		t.Fatalf("the call that kept waiting failed with its neighbour: %v", err)
	}
}

func TestExchangeErrorsShowNoSecret(t *testing.T) {
	t.Parallel()
	const subject = "alice-subject-token-xyz"
	cases := []struct {
		name    string
		answer  func(w http.ResponseWriter, subject string)
		refusal bool
		want    string
	}{
		{"invalid_grant echoing the token", func(w http.ResponseWriter, sub string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": "token " + sub + " is expired"})
		}, true, "refused to exchange the caller's token (invalid_grant: token [redacted] is expired)"},
		{"invalid_client echoing the secret", func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "bad secret " + stsSecret})
		}, false, "refused the gateway's client credentials (invalid_client: bad secret [redacted])"},
		{"a 500 whose body echoes the request", func(w http.ResponseWriter, sub string) {
			w.WriteHeader(500)
			fmt.Fprintf(w, "crashed on subject_token=%s client_secret=%s", sub, stsSecret)
		}, false, "failed (HTTP 500)"},
		{"a description with control characters and no end", func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_target", "error_description": "\x1b[31m" + strings.Repeat("x", 5000)})
		}, true, "(invalid_target:  [31mxxx"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSTS(t)
			s.answer = tc.answer
			c := newExchangeCreds(t, s, nil)
			_, err := c.Header(context.Background(), caller(subject))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, subject) || strings.Contains(msg, stsSecret) || strings.Contains(msg, "\x1b") {
				t.Fatalf("the error shows a secret or a control character: %q", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q, want it to contain %q", msg, tc.want)
			}
			if len(msg) > 400 {
				t.Fatalf("error of %d bytes: a token service's text is cut short", len(msg))
			}
			if got := errors.As(err, new(*gateway.Refusal)); got != tc.refusal {
				t.Fatalf("refusal = %v, want %v (%v)", got, tc.refusal, err)
			}
			// Errors are not cached: the next call asks again.
			c.Header(context.Background(), caller(subject))
			if n := s.requests.Load(); n != 2 {
				t.Fatalf("%d requests after two failed calls, want 2", n)
			}
		})
	}
}

func TestExchangeUnreachableTokenService(t *testing.T) {
	t.Parallel()
	s := newSTS(t)
	s.srv.Close()
	cfg := exchangeConfig(s.srv.URL + "/token?key=" + stsSecret)
	c, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Header(context.Background(), caller("alice-subject-token-xyz"))
	if err == nil {
		t.Fatal("no error from an unreachable token service")
	}
	msg := err.Error()
	if strings.Contains(msg, "alice-subject-token-xyz") || strings.Contains(msg, stsSecret) {
		t.Fatalf("error shows a secret: %q", msg)
	}
	if !strings.Contains(msg, "upstream tickets: token exchange at 127.0.0.1") {
		t.Fatalf("error %q: want it to name the upstream and the token service", msg)
	}
	if errors.As(err, new(*gateway.Refusal)) {
		t.Fatalf("an unreachable token service is the gateway's failure, not a refusal: %v", err)
	}
}

func TestExchangeRefusesACallWithoutToken(t *testing.T) {
	t.Parallel()
	s := newSTS(t)
	c := newExchangeCreds(t, s, nil)
	if _, err := c.Header(context.Background(), &gateway.Principal{ID: "key#0"}); !errors.As(err, new(*gateway.Refusal)) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if n := s.requests.Load(); n != 0 {
		t.Fatalf("%d requests to the token service for a call without token", n)
	}
}

func TestExchangeCacheIsBounded(t *testing.T) {
	t.Parallel()
	s := newSTS(t)
	c, err := New(exchangeConfig(s.srv.URL+"/token"), Options{MaxCached: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := c.Header(context.Background(), caller(fmt.Sprintf("token-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	e := c.(*exchange)
	e.mu.Lock()
	n := len(e.cache)
	e.mu.Unlock()
	if n > 3 {
		t.Fatalf("cache holds %d tokens, limit 3", n)
	}
}

func TestExchangeFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	elsewhere := newSTS(t)
	s := newSTS(t)
	s.answer = func(w http.ResponseWriter, _ string) {
		w.Header().Set("Location", elsewhere.srv.URL+"/token")
		w.WriteHeader(http.StatusTemporaryRedirect) // 307 would re-send the form
	}
	c := newExchangeCreds(t, s, nil)
	_, err := c.Header(context.Background(), caller("alice-subject-token-xyz"))
	if err == nil || !strings.Contains(err.Error(), "failed (HTTP 307)") {
		t.Fatalf("err = %v, want the redirect reported", err)
	}
	if n := elsewhere.requests.Load(); n != 0 {
		t.Fatalf("the caller's token was sent where the redirect pointed (%d requests)", n)
	}
}
