// Package all registers Helix's standard components on an engine context and lists
// every scheme Helix knows, with its direction, for configuration validation.
//
// [Schemes] and [Lookup] are a static table: validating a configuration ("unknown
// scheme kafkaa://", "mcp:// cannot be a trigger") needs no component instance and has
// no side effects. The table also names schemes whose components live in other
// packages (mcp, mcp-server, tool), which this package does not import.
package all

import (
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/component/file"
	helixhttp "github.com/arvenza/helix/pkg/component/http"
	"github.com/arvenza/helix/pkg/component/httpserver"
	"github.com/arvenza/helix/pkg/component/timer"
	"github.com/arvenza/helix/pkg/engine"
)

// Register adds timer://, file://, http-server://, http:// and https:// to hc
// (direct:// and log:// come with engine.NewContext). One http component serves both
// http and https so that they share a connection pool. Call it before hc.Start.
func Register(hc *engine.Context) {
	hc.AddComponent("timer", timer.New(hc.Logger))
	hc.AddComponent("file", file.New(hc.Logger))
	hc.AddComponent("http-server", httpserver.New(hc.Logger))
	h := helixhttp.New(nil)
	hc.AddComponent("http", h)
	hc.AddComponent("https", h)
}

// SchemeInfo describes one URI scheme.
type SchemeInfo struct {
	Scheme      string
	Direction   component.Direction
	Description string
}

// schemes is sorted by scheme; Schemes returns a copy.
var schemes = []SchemeInfo{
	{"direct", component.Both, "synchronous in-process call of another workflow (direct://name)"},
	{"file", component.Both, "read or write files below a directory; as a trigger, poll it for new files (file://dir?fileName=x&operation=read|write)"},
	{"http", component.ProducerOnly, "send an HTTP request; the response becomes the body (http://host/path)"},
	{"http-server", component.ConsumerOnly, "serve HTTP requests on host:port/path; the result is the response (http-server://0.0.0.0:8080/path)"},
	{"https", component.ProducerOnly, "send an HTTPS request; the response becomes the body (https://host/path)"},
	{"log", component.ProducerOnly, "write the exchange to the log (log://name?level=info&showHeaders=true)"},
	{"mcp", component.ProducerOnly, "call a tool on an MCP server (mcp://host:port/tool?transport=http)"},
	{"mcp-server", component.ConsumerOnly, "expose the workflow as a tool of an MCP server (mcp-server://0.0.0.0:3000?transport=http&name=my-tools)"},
	{"timer", component.ConsumerOnly, "fire exchanges on a schedule (timer://name?period=1s&repeatCount=N&delay=0)"},
	{"tool", component.Both, "a tools: entry; as a trigger it is implicit (tool://id), as a target it calls the tool with input validation"},
}

// Schemes lists every scheme Helix knows, sorted by name. The result is a fresh copy.
func Schemes() []SchemeInfo { return append([]SchemeInfo(nil), schemes...) }

// Lookup returns the description of scheme (lower case, without "://").
func Lookup(scheme string) (SchemeInfo, bool) {
	for _, s := range schemes {
		if s.Scheme == scheme {
			return s, true
		}
	}
	return SchemeInfo{}, false
}
