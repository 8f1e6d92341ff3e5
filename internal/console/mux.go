package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/arvenza/helix/internal/redact"
)

// Authenticator decides who a request is. It returns the principal, or an
// error: the console then answers 401 (with a sign-in page for a browser).
// The core's implementation (auth.go) takes the one-time link's cookie, API
// keys and OAuth bearer tokens.
type Authenticator interface {
	Authenticate(r *http.Request) (Principal, error)
}

// AuthenticatorFunc adapts a function to [Authenticator].
type AuthenticatorFunc func(r *http.Request) (Principal, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(r *http.Request) (Principal, error) { return f(r) }

// Options configure the console handler.
type Options struct {
	// Base is the path the console is served under, "/console" by default.
	Base string
	// Auth authenticates every request; required.
	Auth Authenticator
	// Pages are the pages to mount.
	Pages []Page
	// AppName is shown in the frame (helix.name).
	AppName string
	Logger  *slog.Logger
}

// Mux is what a page mounts its routes on. Patterns are relative to the
// console's base and take net/http's ServeMux syntax without the method
// ("/workflows/{id}").
type Mux struct {
	base  string
	mux   *http.ServeMux
	auth  Authenticator
	pages []Page
	name  string
	log   *slog.Logger
	// routes are the registered routes, for the cross-page tests.
	routes []Route
}

// Route is one registered route: its method and full pattern
// ("GET /console/workflows/{id}").
type Route struct {
	Method, Pattern string
}

// Routes returns every route the pages registered, in order (the assets and
// the sign-in routes are not among them).
func (m *Mux) Routes() []Route { return append([]Route(nil), m.routes...) }

// NewMux returns the mux of o with every page mounted; Handler serves it.
func NewMux(o Options) *Mux {
	base := strings.TrimSuffix(o.Base, "/")
	if base == "" {
		base = "/console"
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	pages := append([]Page(nil), o.Pages...)
	sort.SliceStable(pages, func(i, j int) bool { return pages[i].Order < pages[j].Order })
	m := &Mux{base: base, mux: http.NewServeMux(), auth: o.Auth, pages: pages, name: o.AppName, log: log}
	m.mountAssets()
	for _, p := range pages {
		if p.Mount != nil {
			p.Mount(m)
		}
	}
	return m
}

// Base is the console's path prefix ("/console").
func (m *Mux) Base() string { return m.base }

// URL is the console path of p ("/workflows/x" → "/console/workflows/x"),
// with query values when given.
func (m *Mux) URL(p string, query ...url.Values) string {
	u := m.base + p
	if p == "/" {
		u = m.base + "/"
	}
	if len(query) > 0 && len(query[0]) > 0 {
		u += "?" + query[0].Encode()
	}
	return u
}

// Handler serves the console: unauthenticated requests get 401 and never
// reach a page; every response is scrubbed of configured secrets.
func (m *Mux) Handler() http.Handler { return m.mux }

// Get registers a read-only route, open to every signed-in user.
func (m *Mux) Get(pattern string, h Handler) {
	m.handle("GET", pattern, h, RoleViewer)
}

// Post registers an action: operators only (403 for viewers), and only from
// a page of the console itself (same origin), so that another site cannot
// make a signed-in browser act.
func (m *Mux) Post(pattern string, h Handler) {
	m.handle("POST", pattern, h, RoleOperator)
}

func (m *Mux) handle(method, pattern string, h Handler, need Role) {
	full := m.base + pattern
	if pattern == "/" {
		full = m.base + "/{$}"
	}
	m.mux.Handle(method+" "+full, m.guard(h, need))
	m.routes = append(m.routes, Route{Method: method, Pattern: m.base + pattern})
}

// guard is authentication, the role check, the same-origin check of actions
// and the scrub of the response.
func (m *Mux) guard(h Handler, need Role) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "no-referrer")
		if m.auth == nil {
			http.Error(w, "console: no authentication configured", http.StatusInternalServerError)
			return
		}
		p, err := m.auth.Authenticate(r)
		if err != nil {
			m.unauthorized(w, r, err)
			return
		}
		if p.Role < need {
			http.Error(w, fmt.Sprintf("forbidden: %s needs the %s role; %q is a %s", r.URL.Path, need, p.Name, p.Role), http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
			http.Error(w, "forbidden: a console action must come from a console page (Origin does not match)", http.StatusForbidden)
			return
		}
		h(&scrubWriter{ResponseWriter: w}, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

func (m *Mux) unauthorized(w http.ResponseWriter, r *http.Request, err error) {
	if m.refuse(w, r, err) { // signin.go: 429, or a browser's sign-in page
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="helix-console"`)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = fmt.Fprintf(w, "401 unauthorized: %v\nOpen the console link Helix printed at start, or send an API key (Authorization: Bearer KEY).\n", err)
}

// sameOrigin reports whether an action request comes from the console's own
// origin: Origin (or, without it, Referer) must name the request's host.
func sameOrigin(r *http.Request) bool {
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Header.Get("Referer")
	}
	if src == "" {
		// Not a browser form or fetch (curl, a script with an API key): no
		// ambient credential to abuse, since cookies are SameSite=Strict.
		return r.Header.Get("Cookie") == "" || r.Header.Get("Authorization") != ""
	}
	u, err := url.Parse(src)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// scrubWriter replaces configured secrets in every write. Pages write whole
// documents, JSON values and SSE events in one Write each (Render, JSON,
// SSE.Send), so a secret is never split across two writes.
type scrubWriter struct {
	http.ResponseWriter
}

func (s *scrubWriter) Write(p []byte) (int, error) {
	out := redact.Secrets(string(p))
	if _, err := s.ResponseWriter.Write([]byte(out)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush lets SSE streams through the scrub.
func (s *scrubWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (s *scrubWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Render writes v inside the console's frame as one HTML document.
func (m *Mux) Render(w http.ResponseWriter, r *http.Request, v View) {
	var body bytes.Buffer
	if v.Body != nil {
		if err := v.Body.Execute(&body, v.Data); err != nil {
			m.log.Error("console: rendering page", "path", r.URL.Path, "error", err)
			http.Error(w, "console: rendering the page failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	p, _ := PrincipalFrom(r.Context())
	frame := frameData{Title: v.Title, Active: v.Active, Body: template.HTML(body.String()), //nolint:gosec // executed by html/template above
		Nav: m.nav(), User: p.Name, Role: p.Role.String(), App: m.name, Base: m.base,
		Asset: m.base + "/assets/"}
	var out bytes.Buffer
	if err := layout.Execute(&out, frame); err != nil {
		http.Error(w, "console: rendering the frame failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(out.Bytes())
}

// JSON writes v as one JSON document.
func (m *Mux) JSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "console: encoding: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// SSE starts a server-sent event stream on w; nil when w cannot stream.
func (m *Mux) SSE(w http.ResponseWriter) *SSE {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return nil
	}
	// A live feed outlives the listener's write timeout.
	_ = rc.SetWriteDeadline(time.Time{})
	return &SSE{w: w, rc: rc}
}

// SSE is one server-sent event stream.
type SSE struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// Send writes one event (event name may be empty) with data as its data
// lines, and flushes it.
func (s *SSE) Send(event string, data []byte) error {
	var b bytes.Buffer
	if event != "" {
		b.WriteString("event: " + event + "\n")
	}
	for _, line := range strings.Split(string(data), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	if _, err := s.w.Write(b.Bytes()); err != nil {
		return err
	}
	return s.rc.Flush()
}

type navEntry struct {
	Path, Title, URL string
}

type frameData struct {
	Title, Active, User, Role, App, Base, Asset string
	Body                                        template.HTML
	Nav                                         []navEntry
}

func (m *Mux) nav() []navEntry {
	var out []navEntry
	for _, p := range m.pages {
		if p.Nav {
			out = append(out, navEntry{Path: p.Path, Title: p.Title, URL: m.URL(p.Path)})
		}
	}
	return out
}
