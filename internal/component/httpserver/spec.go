package httpserver

import (
	"strconv"

	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// Headers an http-server:// trigger sets on each exchange.
const (
	// HeaderHTTPMethod holds the request's method (GET, POST …).
	HeaderHTTPMethod = "HelixHttpMethod"
	// HeaderHTTPPath holds the request's path.
	HeaderHTTPPath = "HelixHttpPath"
	// HeaderHTTPQuery holds the request's raw query string, without "?".
	HeaderHTTPQuery = "HelixHttpQuery"
)

// Spec is the http-server:// component's description: options, headers, direction.
var Spec = &component.Spec{
	Scheme:    "http-server",
	Summary:   "serve HTTP requests; the workflow's result is the response",
	Direction: component.ConsumerOnly,
	Syntax:    "http-server://host:port[/path][?options]",
	Description: `A trigger that turns each HTTP request into an InOut exchange and its result into
the response. Workflows whose triggers name the same host:port share one listener; each
path is matched exactly, unknown paths get 404 and a path served for other methods only
gets 405. Port 0 binds a free port.

Request → exchange: the body is the request body as a string or, when the Content-Type is
JSON, the decoded map or list (a body labelled JSON that does not parse is answered 400
without running the workflow). The request headers become exchange headers (first value of
each; inbound headers starting with "Helix" are dropped so clients cannot forge internal
ones).

Exchange → response: the status is HelixHttpResponseCode when set, else 200. A failed
workflow answers {"error": "message"}, plus "errors" (a list of {"path", "message"}) when
the input broke a schema, with the 4xx/5xx HelixHttpResponseCode it set before failing
(an agent answers 400 to a body it cannot read), else the status of the failure: 422 for
input a schema or the database rejects, 409 for a clash with existing data (a unique or
foreign key violation in postgres://), 504 when a deadline passed (a target's timeout),
503 when the database is unreachable, 500 for everything else. A workflow's on_error
changes them: on_error: {status: {conflict: 422}}. Strings and bytes are written as they are;
maps, lists, numbers and bools as JSON. Headers the workflow added or changed are copied to
the response, except Helix and connection headers.`,
	Path: []component.PathPart{
		{Name: "host:port", Required: true, Description: "the address to listen on (0.0.0.0:8080 for every interface, 127.0.0.1:0 for a free local port)"},
		{Name: "path", Description: "the path served, matched exactly; empty means /"},
	},
	Options: append([]component.Option{
		{Name: "httpMethod", Type: component.TypeString, Role: component.ConsumerOnly, Since: "0.1",
			Description: "accept only this method (others get 405); default any"},
		{Name: "maxBodyBytes", Type: component.TypeInt, Default: strconv.Itoa(DefaultMaxBodyBytes), Role: component.ConsumerOnly, Since: "0.1",
			Description: "request body limit in bytes (10 MiB); larger requests get 413"},
		{Name: "consumes", Type: component.TypeString, Multiple: true, Role: component.ConsumerOnly, Since: "0.1",
			Description: "media types the workflow reads, comma-separated (application/json, text/csv); another Content-Type gets 415, an empty body 400; default any"},
		{Name: "allowedHosts", Type: component.TypeString, Multiple: true, Role: component.ConsumerOnly, Since: "0.2",
			Description: "Host names served, comma-separated (api.example.com, or with :port); other Hosts get 403. Default: on a loopback address only loopback names (DNS rebinding), elsewhere any; * for any. Listener option"},
		{Name: "trustedProxies", Type: component.TypeString, Multiple: true, Role: component.ConsumerOnly, Since: "0.2",
			Description: "addresses or CIDR prefixes of load balancers, comma-separated: their connections are not capped by maxConnectionsPerIp. Listener option"},
		{Name: "proxyProtocol", Type: component.TypeBool, Default: "false", Role: component.ConsumerOnly, Since: "0.2",
			Description: "read a PROXY protocol header (v1/v2: HAProxy send-proxy, nginx proxy_protocol) from trustedProxies: the client it names is capped per address and is the request's remote address. Listener option"},
	}, netguard.SpecOptions(component.ConsumerOnly)...),
	Headers: []component.Header{
		{Name: HeaderHTTPMethod, Type: "string", Use: component.Writes, Role: component.ConsumerOnly, Description: "the request method"},
		{Name: HeaderHTTPPath, Type: "string", Use: component.Writes, Role: component.ConsumerOnly, Description: "the request path"},
		{Name: HeaderHTTPQuery, Type: "string", Use: component.Writes, Role: component.ConsumerOnly, Description: "the raw query string, without ?"},
		{Name: exchange.HeaderHTTPResponseCode, Type: "int", Use: component.Reads, Role: component.ConsumerOnly,
			Description: "the response status (an int or a numeric string); default 200"},
		{Name: "*", Type: "string", Use: component.ReadsWrites, Role: component.ConsumerOnly,
			Description: "any other header: request headers become exchange headers; headers the workflow added or changed go on the response"},
	},
	Examples: []component.Example{
		{URI: "http-server://0.0.0.0:8080/orders?httpMethod=POST&consumes=application/json", Description: "accept JSON orders by POST on port 8080"},
		{URI: "http-server://127.0.0.1:8080/health", Description: "a local-only endpoint"},
	},
	Since: "0.1",
	// A request starts a fresh exchange; its span is an HTTP server span (trace.go).
	FreshExchanges: true,
	Trace:          traceInfo,
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
