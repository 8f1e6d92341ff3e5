// Package console serves Helix's web console: server-rendered pages on the
// management listener (under /console) that show every workflow, MCP server,
// exchange, agent run, RAG pipeline, durable run and trace of the running
// application, live.
//
// The console is a set of [Page]s mounted on a [Mux]. Each page lives in its own
// package under internal/console (overview, workflow, exchanges, mcppage, agents,
// ragpage, runs, traces), declares the small source interface it reads the
// application through, and is wired by pkg/app (console*.go). This package holds
// what every page shares: who the user is ([Principal], [Role]), the routes
// ([Mux]: GET for every signed-in user, POST for operators only, with a
// same-origin check), the layout every page renders into ([Mux.Render]) and the
// final scrub that keeps configured secrets out of every byte the console writes.
//
// Cost: the data path never waits for the console. What the pages show comes
// from counters the engine keeps anyway and from bounded, sampled captures
// (internal/console/capture); a page is computed when it is asked for.
package console

import (
	"context"
	"html/template"
	"net/http"
)

// Role is what a console user may do.
type Role int

const (
	// RoleViewer may look at every page; it is the default of an API key or
	// token without the operator role.
	RoleViewer Role = iota
	// RoleOperator may also act: replay an exchange, resume/cancel/approve a
	// durable run, call a tool from the try-it form.
	RoleOperator
)

// String is the role's name as configuration writes it ("viewer", "operator").
func (r Role) String() string {
	if r == RoleOperator {
		return "operator"
	}
	return "viewer"
}

// OperatorRole is the role name (in an API key's roles or an OAuth token's
// roles claim) that makes a console user an operator.
const OperatorRole = "operator"

// Principal is the signed-in console user.
type Principal struct {
	// Name is who the user is: the API key's name, the token's subject, or
	// "local" for the one-time link printed at start.
	Name string
	Role Role
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p; the console's authentication sets it
// on every request before a page handler runs.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the request's console user; ok is false outside the
// console's authentication (which never lets such a request reach a page).
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Page is one page of the console (with the routes under it).
type Page struct {
	// Path is the page's path under the console's base, "/" for the overview,
	// "/workflows" … It is where the navigation links to.
	Path string
	// Title is the navigation label and the default <title>.
	Title string
	// Order places the page in the navigation (ascending); pages with Nav
	// false are not listed.
	Order int
	Nav   bool
	// Mount registers the page's routes on m.
	Mount func(m *Mux)
}

// View is what a page hands to [Mux.Render]: the layout puts Body inside the
// common frame (navigation, title, the user and role, the live indicator).
type View struct {
	Title string
	// Active is the Path of the navigation entry to highlight.
	Active string
	// Body is the page's own template, executed with Data; it may use the
	// layout's functions (see FuncMap).
	Body *template.Template
	Data any
}

// Handler is a page handler; Mux wraps it with authentication, the role check
// and the secret scrub.
type Handler = http.HandlerFunc
