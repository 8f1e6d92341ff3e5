package console

import (
	"container/list"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Auth is the console's [Authenticator]: a cookie session (from the one-time
// link printed at start, or from an API key pasted into the sign-in form),
// API keys (Authorization: Bearer, X-API-Key) and OAuth bearer tokens.
// Failed authentications are limited per client like an MCP server's
// (auth_failure_limit). Wrap serves the link and the sign-in form in front
// of the console's mux.
type Auth struct {
	base    string
	keys    []authKey
	verify  TokenVerifyFunc
	limiter FailureLimiter
	link    string // the link's token; "" when no link is issued
	ttl     time.Duration
	now     func() time.Time

	mu       sync.Mutex
	sessions map[string]*list.Element // id → *session
	order    *list.List               // front: newest
	max      int
}

// APIKey is one console key: who it stands for and their roles.
type APIKey struct {
	Key   string
	Name  string
	Roles []string
}

// TokenVerifyFunc validates an OAuth bearer token and returns its subject and
// roles (internal/component/mcp/security's TokenVerifier).
type TokenVerifyFunc func(ctx context.Context, raw string) (subject string, roles []string, err error)

// FailureLimiter counts failed authentications per client
// (security.FailureLimiter).
type FailureLimiter interface {
	Blocked(r *http.Request) (time.Duration, bool)
	Failure(r *http.Request)
}

// AuthOptions configure [NewAuth].
type AuthOptions struct {
	// Base is the console's path ("/console").
	Base string
	Keys []APIKey
	// Verify validates OAuth bearer tokens; nil accepts none.
	Verify TokenVerifyFunc
	// Limiter limits failed authentications; nil limits none.
	Limiter FailureLimiter
	// Link issues the one-time sign-in link (a loopback listener only: whoever
	// can read the process's output owns it).
	Link bool
	// SessionTTL is how long a cookie session lasts (default 12h);
	// MaxSessions bounds the session table (default 1000: the oldest session
	// is dropped at capacity).
	SessionTTL  time.Duration
	MaxSessions int
}

type authKey struct {
	digest [sha256.Size]byte
	who    Principal
}

type session struct {
	id      string
	who     Principal
	expires time.Time
}

// CookieName is the console's session cookie.
const CookieName = "helix_console"

// LockedOutError is returned for a client over the failed-authentication
// limit: the console answers 429 with Retry-After.
type LockedOutError struct{ Wait time.Duration }

func (e *LockedOutError) Error() string {
	return fmt.Sprintf("too many failed sign-ins from this address; try again in %s", e.Wait.Round(time.Second))
}

var (
	errNoCredentials = errors.New("no credentials: sign in with the console link Helix printed at start, or with an API key")
	errBadKey        = errors.New("the API key is not one of helix.console.auth.api_keys")
	errBadSession    = errors.New("the console session expired or is unknown (Helix restarted?): sign in again")
)

// NewAuth returns the console's authenticator.
func NewAuth(o AuthOptions) *Auth {
	a := &Auth{base: strings.TrimSuffix(o.Base, "/"), verify: o.Verify, limiter: o.Limiter, ttl: o.SessionTTL,
		max: o.MaxSessions, now: time.Now, sessions: map[string]*list.Element{}, order: list.New()}
	if a.base == "" {
		a.base = "/console"
	}
	if a.ttl <= 0 {
		a.ttl = 12 * time.Hour
	}
	if a.max <= 0 {
		a.max = 1000
	}
	for i, k := range o.Keys {
		who := Principal{Name: k.Name, Role: RoleViewer}
		if who.Name == "" {
			who.Name = fmt.Sprintf("api_keys[%d]", i)
		}
		if slices.Contains(k.Roles, OperatorRole) {
			who.Role = RoleOperator
		}
		a.keys = append(a.keys, authKey{digest: sha256.Sum256([]byte(k.Key)), who: who})
	}
	if o.Link {
		a.link = randomID()
	}
	return a
}

// LinkToken is the one-time link's token ("" when none is issued); the link
// is the console's URL with ?token=LinkToken.
func (a *Auth) LinkToken() string { return a.link }

// Authenticate implements [Authenticator].
func (a *Auth) Authenticate(r *http.Request) (Principal, error) {
	if a.limiter != nil {
		if wait, blocked := a.limiter.Blocked(r); blocked {
			return Principal{}, &LockedOutError{Wait: wait}
		}
	}
	p, presented, err := a.identify(r)
	if err != nil && presented && a.limiter != nil {
		a.limiter.Failure(r)
	}
	return p, err
}

// identify finds the request's user; presented says whether the request
// carried a credential at all (only wrong ones count as failures).
func (a *Auth) identify(r *http.Request) (Principal, bool, error) {
	if tok := bearer(r); tok != "" {
		if p, ok := a.matchKey(tok); ok {
			return p, true, nil
		}
		if a.verify != nil && strings.Count(tok, ".") == 2 {
			sub, roles, err := a.verify(r.Context(), tok)
			if err != nil {
				return Principal{}, true, fmt.Errorf("bearer token refused: %w", err)
			}
			p := Principal{Name: sub, Role: RoleViewer}
			if slices.Contains(roles, OperatorRole) {
				p.Role = RoleOperator
			}
			return p, true, nil
		}
		return Principal{}, true, errBadKey
	}
	if k := r.Header.Get("X-API-Key"); k != "" {
		if p, ok := a.matchKey(k); ok {
			return p, true, nil
		}
		return Principal{}, true, errBadKey
	}
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		if p, ok := a.session(c.Value); ok {
			return p, true, nil
		}
		// A stale cookie after a restart is normal, not an attack.
		return Principal{}, false, errBadSession
	}
	return Principal{}, false, errNoCredentials
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// matchKey compares candidate with every key in constant time (no early
// exit, so the time does not tell which key nearly matched).
func (a *Auth) matchKey(candidate string) (Principal, bool) {
	d := sha256.Sum256([]byte(candidate))
	found := -1
	for i := range a.keys {
		if subtle.ConstantTimeCompare(d[:], a.keys[i].digest[:]) == 1 && found < 0 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, false
	}
	return a.keys[found].who, true
}

func (a *Auth) session(id string) (Principal, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.sessions[id]
	if !ok {
		return Principal{}, false
	}
	s := e.Value.(*session)
	if !a.now().Before(s.expires) {
		a.order.Remove(e)
		delete(a.sessions, id)
		return Principal{}, false
	}
	return s.who, true
}

// newSession stores a session for p, dropping the oldest at capacity.
func (a *Auth) newSession(p Principal) *session {
	s := &session{id: randomID(), who: p, expires: a.now().Add(a.ttl)}
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.order.Len() >= a.max {
		old := a.order.Back()
		a.order.Remove(old)
		delete(a.sessions, old.Value.(*session).id)
	}
	a.sessions[s.id] = a.order.PushFront(s)
	return s
}

func (a *Auth) endSession(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.sessions[id]; ok {
		a.order.Remove(e)
		delete(a.sessions, id)
	}
}

// Sessions is the number of live sessions (for tests and the overview).
func (a *Auth) Sessions() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.order.Len()
}

func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// SignInPath and SignOutPath are the sign-in form's target and sign-out.
const (
	SignInPath  = "/signin"
	SignOutPath = "/signout"
)

// Wrap serves, in front of next (the console's mux): a GET with ?token= of
// the one-time link (a session cookie, then a redirect to the same URL
// without the token), the sign-in form's POST (an API key → a session
// cookie) and sign-out.
func (a *Auth) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Query().Has("token"):
			a.serveLink(w, r)
		case r.Method == http.MethodPost && r.URL.Path == a.base+SignInPath:
			a.serveSignIn(w, r)
		case r.Method == http.MethodPost && r.URL.Path == a.base+SignOutPath:
			a.serveSignOut(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func (a *Auth) serveLink(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if a.limiter != nil {
		if wait, blocked := a.limiter.Blocked(r); blocked {
			tooMany(w, wait)
			return
		}
	}
	q := r.URL.Query()
	tok := q.Get("token")
	if a.link == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(a.link)) != 1 {
		if a.limiter != nil {
			a.limiter.Failure(r)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte("401 unauthorized: this sign-in link is not the one Helix printed at start (it changes at every start): copy the console: line from Helix's output again\n"))
		return
	}
	a.setCookie(w, r, a.newSession(Principal{Name: "local", Role: RoleOperator}))
	q.Del("token")
	u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
}

func (a *Auth) serveSignIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !sameOrigin(r) {
		http.Error(w, "forbidden: sign in from the console's own sign-in page (Origin does not match)", http.StatusForbidden)
		return
	}
	if a.limiter != nil {
		if wait, blocked := a.limiter.Blocked(r); blocked {
			tooMany(w, wait)
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	key := strings.TrimSpace(r.PostFormValue("key"))
	p, ok := a.matchKey(key)
	if !ok || key == "" {
		if a.limiter != nil && key != "" {
			a.limiter.Failure(r)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_ = signIn.Execute(w, signInData{Base: a.base, Next: a.next(r.PostFormValue("next")),
			Error: "That key is not one of the console's API keys (helix.console.auth.api_keys). Check it and try again."})
		return
	}
	a.setCookie(w, r, a.newSession(p))
	http.Redirect(w, r, a.next(r.PostFormValue("next")), http.StatusSeeOther)
}

func (a *Auth) serveSignOut(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "forbidden: sign out from a console page (Origin does not match)", http.StatusForbidden)
		return
	}
	if c, err := r.Cookie(CookieName); err == nil {
		a.endSession(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: a.base, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, a.base+"/", http.StatusSeeOther)
}

// next is where to go after signing in: a path under the console only, so
// the form cannot be used to redirect elsewhere.
func (a *Auth) next(n string) string {
	u, err := url.Parse(n)
	if err != nil || u.IsAbs() || u.Host != "" || strings.HasPrefix(n, "//") || strings.Contains(n, `\`) ||
		!strings.HasPrefix(u.Path, a.base+"/") {
		return a.base + "/"
	}
	return u.RequestURI()
}

func (a *Auth) setCookie(w http.ResponseWriter, r *http.Request, s *session) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.id, Path: a.base, Expires: s.expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", fmt.Sprint(int64(wait/time.Second)+1))
	http.Error(w, (&LockedOutError{Wait: wait}).Error(), http.StatusTooManyRequests)
}
