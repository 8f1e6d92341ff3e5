package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingLimiter locks a client out after limit failures.
type countingLimiter struct {
	mu    sync.Mutex
	limit int
	fails map[string]int
}

func (c *countingLimiter) Blocked(r *http.Request) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Minute, c.fails[r.RemoteAddr] >= c.limit
}

func (c *countingLimiter) Failure(r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fails[r.RemoteAddr]++
}

func testMux(a *Auth) http.Handler {
	page := Page{Path: "/", Title: "Home", Nav: true, Mount: func(m *Mux) {
		m.Get("/", func(w http.ResponseWriter, r *http.Request) {
			p, _ := PrincipalFrom(r.Context())
			_, _ = w.Write([]byte("hello " + p.Name + " " + p.Role.String()))
		})
		m.Post("/act", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("done")) })
	}}
	return a.Wrap(NewMux(Options{Auth: a, Pages: []Page{page}}).Handler())
}

func do(h http.Handler, method, target string, hdr map[string]string, body string) *httptest.ResponseRecorder {
	var req *http.Request
	if body != "" {
		req = httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, target, nil)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestKeysRolesAndActions(t *testing.T) {
	t.Parallel()
	a := NewAuth(AuthOptions{Keys: []APIKey{{Key: "view-key"}, {Key: "op-key", Name: "ops", Roles: []string{"deploy", "operator"}}}})
	h := testMux(a)
	if rec := do(h, "GET", "/console/", map[string]string{"Authorization": "Bearer view-key"}, ""); rec.Body.String() != "hello api_keys[0] viewer" {
		t.Fatalf("viewer: %d %q", rec.Code, rec.Body)
	}
	if rec := do(h, "GET", "/console/", map[string]string{"X-API-Key": "op-key"}, ""); rec.Body.String() != "hello ops operator" {
		t.Fatalf("operator: %d %q", rec.Code, rec.Body)
	}
	if rec := do(h, "POST", "/console/act", map[string]string{"X-API-Key": "view-key"}, ""); rec.Code != 403 || !strings.Contains(rec.Body.String(), "operator role") {
		t.Fatalf("viewer action: %d %q", rec.Code, rec.Body)
	}
	if rec := do(h, "POST", "/console/act", map[string]string{"X-API-Key": "op-key"}, ""); rec.Code != 200 {
		t.Fatalf("operator action: %d %q", rec.Code, rec.Body)
	}
	// Another site's page cannot make a signed-in browser act.
	if rec := do(h, "POST", "/console/act", map[string]string{"X-API-Key": "op-key", "Origin": "https://evil.example"}, ""); rec.Code != 403 {
		t.Fatalf("cross-origin action: %d", rec.Code)
	}
	for _, hdr := range []map[string]string{nil, {"Authorization": "Bearer nope"}, {"X-API-Key": "view-key "}, {"Authorization": "Basic dmlldy1rZXk="}} {
		if rec := do(h, "GET", "/console/", hdr, ""); rec.Code != 401 || rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%v: %d", hdr, rec.Code)
		}
	}
}

func TestOAuthRoles(t *testing.T) {
	t.Parallel()
	a := NewAuth(AuthOptions{Verify: func(_ context.Context, raw string) (string, []string, error) {
		switch raw {
		case "a.b.op":
			return "alice", []string{"operator"}, nil
		case "a.b.view":
			return "bob", nil, nil
		}
		return "", nil, errors.New("signature invalid")
	}})
	h := testMux(a)
	if rec := do(h, "GET", "/console/", map[string]string{"Authorization": "Bearer a.b.op"}, ""); rec.Body.String() != "hello alice operator" {
		t.Fatalf("operator token: %q", rec.Body)
	}
	if rec := do(h, "GET", "/console/", map[string]string{"Authorization": "Bearer a.b.view"}, ""); rec.Body.String() != "hello bob viewer" {
		t.Fatalf("viewer token: %q", rec.Body)
	}
	if rec := do(h, "GET", "/console/", map[string]string{"Authorization": "Bearer a.b.forged"}, ""); rec.Code != 401 || !strings.Contains(rec.Body.String(), "signature invalid") {
		t.Fatalf("forged token: %d %q", rec.Code, rec.Body)
	}
}

func TestFailedSignInsAreLimited(t *testing.T) {
	t.Parallel()
	lim := &countingLimiter{limit: 3, fails: map[string]int{}}
	a := NewAuth(AuthOptions{Keys: []APIKey{{Key: "good"}}, Limiter: lim, Link: true})
	h := testMux(a)
	// Requests without any credential are not failures (a browser's first visit).
	for i := 0; i < 5; i++ {
		do(h, "GET", "/console/", nil, "")
	}
	for i := 0; i < 3; i++ {
		if rec := do(h, "GET", "/console/", map[string]string{"X-API-Key": "guess"}, ""); rec.Code != 401 {
			t.Fatalf("guess %d: %d", i, rec.Code)
		}
	}
	// Locked out now, even with the right key, and the link's guesses too.
	if rec := do(h, "GET", "/console/", map[string]string{"X-API-Key": "good"}, ""); rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("after the limit: %d", rec.Code)
	}
	if rec := do(h, "GET", "/console/?token="+a.LinkToken(), nil, ""); rec.Code != 429 {
		t.Fatalf("link after the limit: %d", rec.Code)
	}
}

func TestLinkSignInAndSessions(t *testing.T) {
	t.Parallel()
	a := NewAuth(AuthOptions{Link: true, MaxSessions: 2, Keys: []APIKey{{Key: "k", Name: "kim"}}})
	h := testMux(a)
	if NewAuth(AuthOptions{}).LinkToken() != "" {
		t.Fatal("a link without Link")
	}
	rec := do(h, "GET", "/console/?token="+a.LinkToken()+"&kind=workflow", nil, "")
	if rec.Code != 303 || rec.Header().Get("Location") != "/console/?kind=workflow" {
		t.Fatalf("link: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	cookie := rec.Result().Cookies()[0]
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/console" || len(cookie.Value) != 64 {
		t.Fatalf("cookie %+v", cookie)
	}
	withCookie := map[string]string{"Cookie": CookieName + "=" + cookie.Value}
	if rec := do(h, "GET", "/console/", withCookie, ""); rec.Body.String() != "hello local operator" {
		t.Fatalf("session: %q", rec.Body)
	}
	// A browser signing in with a key through the form; next stays inside the console.
	for next, want := range map[string]string{"/console/mcp?x=1": "/console/mcp?x=1", "https://evil.example/": "/console/",
		"//evil.example/console/": "/console/", "/other": "/console/", `/console/\evil`: "/console/"} {
		rec := do(h, "POST", "/console/signin", nil, url.Values{"key": {"k"}, "next": {next}}.Encode())
		if rec.Code != 303 || rec.Header().Get("Location") != want {
			t.Errorf("next %q: %d %q, want %q", next, rec.Code, rec.Header().Get("Location"), want)
		}
	}
	// The table is bounded: the link's session was the oldest and is gone.
	if a.Sessions() != 2 {
		t.Fatalf("%d sessions, want 2", a.Sessions())
	}
	if rec := do(h, "GET", "/console/", withCookie, ""); rec.Code != 401 {
		t.Fatalf("evicted session: %d", rec.Code)
	}
	if rec := do(h, "POST", "/console/signin", map[string]string{"Origin": "https://evil.example"}, "key=k"); rec.Code != 403 {
		t.Fatalf("cross-origin sign-in: %d", rec.Code)
	}
	if rec := do(h, "POST", "/console/signin", nil, "key=wrong"); rec.Code != 401 || !strings.Contains(rec.Body.String(), "not one of the console") {
		t.Fatalf("wrong key in the form: %d", rec.Code)
	}
	// A browser without a session gets the sign-in page, with the 401.
	rec = do(h, "GET", "/console/?kind=agent", map[string]string{"Accept": "text/html"}, "")
	if rec.Code != 401 || !strings.Contains(rec.Body.String(), `<input id="key"`) || !strings.Contains(rec.Body.String(), `value="/console/?kind=agent"`) {
		t.Fatalf("sign-in page: %d %s", rec.Code, rec.Body)
	}
}

func TestSessionsExpireAndSignOut(t *testing.T) {
	t.Parallel()
	a := NewAuth(AuthOptions{Keys: []APIKey{{Key: "k"}}, SessionTTL: time.Hour})
	now := time.Unix(0, 0)
	a.now = func() time.Time { return now }
	h := testMux(a)
	s := a.newSession(Principal{Name: "x"})
	c := map[string]string{"Cookie": CookieName + "=" + s.id}
	if rec := do(h, "GET", "/console/", c, ""); rec.Code != 200 {
		t.Fatalf("fresh session: %d", rec.Code)
	}
	now = now.Add(time.Hour)
	if rec := do(h, "GET", "/console/", c, ""); rec.Code != 401 || a.Sessions() != 0 {
		t.Fatalf("expired session: %d, %d left", rec.Code, a.Sessions())
	}
	s = a.newSession(Principal{Name: "x"})
	c = map[string]string{"Cookie": CookieName + "=" + s.id}
	if rec := do(h, "POST", "/console/signout", c, ""); rec.Code != 403 {
		t.Fatalf("sign out without an Origin, with a cookie: %d, want 403", rec.Code)
	}
	c["Origin"] = "http://example.com" // httptest's host
	if rec := do(h, "POST", "/console/signout", c, ""); rec.Code != 303 {
		t.Fatalf("sign out: %d", rec.Code)
	}
	if rec := do(h, "GET", "/console/", c, ""); rec.Code != 401 {
		t.Fatalf("after sign-out: %d", rec.Code)
	}
}
