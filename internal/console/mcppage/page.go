package mcppage

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/arvenza/helix/internal/console"
)

// Bounds of what one page shows.
const (
	maxServers   = 200
	toolsPerPage = 100
	maxSessions  = 50
	maxFormBytes = 2 << 20
)

//go:embed templates/list.html
var listText string

//go:embed templates/server.html
var serverText string

//go:embed templates/tool.html
var toolText string

var (
	listTmpl   = console.PageTemplate("mcp-list", listText)
	serverTmpl = console.PageTemplate("mcp-server", serverText)
	toolTmpl   = console.PageTemplate("mcp-tool", toolText)
)

// Page returns the MCP page reading src.
func Page(src Source) *console.Page {
	p := &page{src: src, hc: &http.Client{
		// The call goes to the server's own listener: never through a proxy
		// from the environment, and never following a redirect elsewhere.
		Transport:     &http.Transport{Proxy: nil, MaxIdleConns: 4, IdleConnTimeout: 30 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	return &console.Page{Path: "/mcp", Title: "MCP", Order: 30, Nav: true, Mount: p.mount}
}

type page struct {
	src Source
	hc  *http.Client
	m   *console.Mux
}

func (p *page) mount(m *console.Mux) {
	p.m = m
	m.Get("/mcp", p.list)
	m.Get("/mcp/{server}", p.server)
	m.Get("/mcp/{server}/tools/{tool}", p.tool)
	m.Post("/mcp/{server}/tools/{tool}", p.call)
}

func (p *page) css() string { return p.m.URL("/assets/mcp.css") }

// link is a console URL of a path under the page.
func (p *page) link(parts ...string) string {
	var b strings.Builder
	b.WriteString("/mcp")
	for _, s := range parts {
		b.WriteString("/" + pathEscape(s))
	}
	return p.m.URL(b.String())
}

func pathEscape(s string) string {
	// url.PathEscape keeps "." and "-", which tool names use; "/" cannot be in
	// a name a route matched.
	r := strings.NewReplacer("%", "%25", "/", "%2F", "?", "%3F", "#", "%23", " ", "%20")
	return r.Replace(s)
}

type serverRow struct {
	Server
	Link     string
	Sessions int
}

func (p *page) list(w http.ResponseWriter, r *http.Request) {
	all := p.src.Servers()
	rows := make([]serverRow, 0, min(len(all), maxServers))
	for i, s := range all {
		if i == maxServers {
			break
		}
		_, open := p.src.Sessions(s.ID, 0)
		rows = append(rows, serverRow{Server: s, Link: p.link(s.ID), Sessions: open})
	}
	p.m.Render(w, r, console.View{Title: "MCP", Active: "/mcp", Body: listTmpl,
		Data: map[string]any{"Servers": rows, "Total": len(all), "CSS": p.css()}})
}

func (p *page) find(id string) (Server, bool) {
	for _, s := range p.src.Servers() {
		if s.ID == id {
			return s, true
		}
	}
	return Server{}, false
}

func (p *page) notFound(w http.ResponseWriter, r *http.Request, what string) {
	w.WriteHeader(http.StatusNotFound)
	p.m.Render(w, r, console.View{Title: "Not found", Active: "/mcp", Body: notFoundTmpl,
		Data: map[string]any{"What": what, "Back": p.m.URL("/mcp")}})
}

var notFoundTmpl = console.PageTemplate("mcp-404", `<p>{{.What}}</p><p><a href="{{.Back}}">All MCP servers</a></p>`)

type toolRow struct {
	Tool
	Link string
}

func (p *page) server(w http.ResponseWriter, r *http.Request) {
	s, ok := p.find(r.PathValue("server"))
	if !ok {
		p.notFound(w, r, fmt.Sprintf("There is no MCP server %q.", truncate(r.PathValue("server"), 200)))
		return
	}
	pageNo, _ := strconv.Atoi(r.URL.Query().Get("page"))
	pages := max(1, (len(s.Tools)+toolsPerPage-1)/toolsPerPage)
	pageNo = min(max(pageNo, 1), pages)
	from := (pageNo - 1) * toolsPerPage
	to := min(from+toolsPerPage, len(s.Tools))
	tools := make([]toolRow, 0, to-from)
	for _, t := range s.Tools[from:to] {
		tools = append(tools, toolRow{Tool: t, Link: p.link(s.ID, "tools", t.Name)})
	}
	sessions, open := p.src.Sessions(s.ID, maxSessions)
	var prev, next string
	if pageNo > 1 {
		prev = p.link(s.ID) + "?page=" + strconv.Itoa(pageNo-1)
	}
	if pageNo < pages {
		next = p.link(s.ID) + "?page=" + strconv.Itoa(pageNo+1)
	}
	upTools := map[string]string{}
	if s.Gateway != nil {
		for _, u := range s.Gateway.Upstreams {
			for _, t := range u.Tools {
				upTools[t.Served] = p.link(s.ID, "tools", t.Served)
			}
		}
	}
	p.m.Render(w, r, console.View{Title: "MCP server " + s.ID, Active: "/mcp", Body: serverTmpl, Data: map[string]any{
		"S": s, "Tools": tools, "From": from + 1, "To": to, "Prev": prev, "Next": next,
		"Sessions": sessions, "Open": open, "Back": p.m.URL("/mcp"), "ToolLinks": upTools, "CSS": p.css(),
	}})
}

// toolView is what the tool page shows.
type toolView struct {
	S         Server
	T         Tool
	Back      string
	ServerURL string
	Action    string
	Input     string
	Output    string
	OutProps  []Field
	Form      Form
	CanCall   bool
	Operator  bool
	Why       string // why the form cannot call
	Values    map[string]string
	Raw       string
	Error     string
	Events    []Event
	Outcome   *Outcome
	Called    bool
	Script    string
	CSS       string
}

func (p *page) toolPage(w http.ResponseWriter, r *http.Request) (toolView, bool) {
	s, ok := p.find(r.PathValue("server"))
	if !ok {
		p.notFound(w, r, fmt.Sprintf("There is no MCP server %q.", truncate(r.PathValue("server"), 200)))
		return toolView{}, false
	}
	name := r.PathValue("tool")
	var t *Tool
	for i := range s.Tools {
		if s.Tools[i].Name == name {
			t = &s.Tools[i]
			break
		}
	}
	if t == nil {
		p.notFound(w, r, fmt.Sprintf("MCP server %q has no tool %q.", s.ID, truncate(name, 200)))
		return toolView{}, false
	}
	who, _ := console.PrincipalFrom(r.Context())
	v := toolView{S: s, T: *t, Back: p.link(s.ID), ServerURL: p.m.URL("/mcp"), Action: p.link(s.ID, "tools", t.Name), Script: p.m.URL("/assets/mcp.js"), CSS: p.css(),
		Input: schemaText(t.Input), Output: schemaText(t.Output), Form: FormFor(t.Input), OutProps: FormFor(t.Output).Fields,
		Operator: who.Role == console.RoleOperator, Values: map[string]string{}}
	for _, f := range v.Form.Fields {
		v.Values[f.Name] = f.Value
	}
	switch {
	case s.Transport == "stdio":
		v.Why = "The try-it form needs an HTTP server: this one speaks stdio (its client is the process that started Helix)."
	case s.Transport != "http":
		v.Why = "The try-it form speaks Streamable HTTP: this server serves only the older SSE transport (transport: " + s.Transport + ")."
	case !s.Running || s.CallURL == "":
		v.Why = "The server is not running, so the tool cannot be called now."
	default:
		v.CanCall = true
	}
	return v, true
}

func (p *page) tool(w http.ResponseWriter, r *http.Request) {
	v, ok := p.toolPage(w, r)
	if !ok {
		return
	}
	p.render(w, r, v)
}

func (p *page) render(w http.ResponseWriter, r *http.Request, v toolView) {
	p.m.Render(w, r, console.View{Title: "Tool " + v.T.Name, Active: "/mcp", Body: toolTmpl, Data: v})
}

// call is the try-it form's POST: the call goes through the server's own
// listener. With Accept: text/event-stream (assets/mcp.js) every step is
// streamed as it happens; otherwise the page is rendered with the whole
// transcript once the call ends.
func (p *page) call(w http.ResponseWriter, r *http.Request) {
	v, ok := p.toolPage(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		v.Error = "The form could not be read (more than 2 MiB?): " + err.Error()
		p.render(w, r, v)
		return
	}
	credential := r.PostForm.Get("credential")
	for _, f := range v.Form.Fields {
		v.Values[f.Name] = r.PostForm.Get(fieldPrefix + f.Name)
	}
	v.Raw = r.PostForm.Get(rawField)
	stream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	if !v.CanCall {
		p.refuse(w, r, v, stream, http.StatusConflict, v.Why)
		return
	}
	args, err := v.Form.Arguments(r.PostForm)
	if err != nil {
		p.refuse(w, r, v, stream, http.StatusBadRequest, "Nothing was sent: "+err.Error()+".")
		return
	}
	ctx := context.WithoutCancel(r.Context())
	if stream {
		sse := p.m.SSE(w)
		if sse == nil {
			return
		}
		// The call ends when the browser goes away.
		ctx = r.Context()
		out := Call(ctx, p.hc, v.S.CallURL, credential, v.T.Name, args, func(e Event) {
			b, _ := json.Marshal(eventJSON(e))
			_ = sse.Send("event", b)
		})
		b, _ := json.Marshal(out)
		_ = sse.Send("outcome", b)
		return
	}
	out := Call(ctx, p.hc, v.S.CallURL, credential, v.T.Name, args, func(e Event) { v.Events = append(v.Events, e) })
	v.Outcome, v.Called = &out, true
	p.render(w, r, v)
}

func (p *page) refuse(w http.ResponseWriter, r *http.Request, v toolView, stream bool, status int, msg string) {
	if stream {
		p.m.JSON(w, status, map[string]string{"error": msg})
		return
	}
	w.WriteHeader(status)
	v.Error = msg
	p.render(w, r, v)
}

// eventJSON is an event as assets/mcp.js reads it.
func eventJSON(e Event) map[string]any {
	return map[string]any{"kind": e.Kind, "dir": e.Dir, "status": e.Status,
		"at": e.At.Round(time.Microsecond).String(), "text": e.Text, "headers": e.Headers}
}

// schemaText is a schema as indented JSON, truncated.
func schemaText(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	return pretty(b)
}
