package http

import (
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// HeaderHTTPURI carries the target URL for endpoints with bridgeEndpoint=true.
const HeaderHTTPURI = "HelixHttpUri"

// Spec is the http:// and https:// component's description: options, headers,
// direction.
var Spec = &component.Spec{
	Scheme:    "http",
	Aliases:   []string{"https"},
	Summary:   "send an HTTP request; the response becomes the body",
	Direction: component.ProducerOnly,
	Syntax:    "http://host[:port]/path[?options]",
	Description: `The request URL is the endpoint URI without the options below. Method: the
httpMethod option, else POST when the body is not nil and GET when it is (the
HelixHttpMethod header of an http-server:// trigger is deliberately not reused). GET and
HEAD requests carry no body. Strings and bytes are sent as they are; maps, lists, numbers
and bools as JSON. Every exchange header that can be an HTTP header is sent (Helix*
headers and connection headers are not), so a workflow triggered by http-server://
forwards the inbound request's headers unless it removes them.

The response body becomes the body, decoded into a map or list when the response is JSON;
the response headers are copied onto the exchange. A non-2xx status fails the exchange
unless throwExceptionOnFailure=false.`,
	Path: []component.PathPart{
		{Name: "host[:port]", Required: true, Description: "the server (the endpoint's own address is ignored with bridgeEndpoint=true)"},
		{Name: "path", Description: "the request path; may hold placeholders such as /users/${body.id}"},
	},
	OpenOptions: "sent to the server as they are (http://api/search?q=${body.q}&timeout=5s sends ?q=… and keeps timeout for itself)",
	Options: []component.Option{
		{Name: "httpMethod", Type: component.TypeString, Role: component.ProducerOnly, Since: "0.1",
			Description: "a fixed method (GET, PUT, DELETE …) instead of POST-with-body / GET-without"},
		{Name: "timeout", Type: component.TypeDuration, Default: "30s", Role: component.ProducerOnly, Since: "0.1",
			Description: "limit for the whole request, response body included"},
		{Name: "throwExceptionOnFailure", Type: component.TypeBool, Default: "true", Role: component.ProducerOnly, Since: "0.1",
			Description: "a non-2xx status fails the exchange; with false the response passes on and the workflow inspects HelixHttpResponseCode"},
		{Name: "bridgeEndpoint", Type: component.TypeBool, Default: "false", Role: component.ProducerOnly, Since: "0.1",
			Description: "take the URL from the HelixHttpUri header, or else from a map body {url, method, headers, body} that describes the whole request"},
		{Name: "maxResponseBytes", Type: component.TypeInt, Default: "67108864", Role: component.ProducerOnly, Since: "0.1",
			Description: "response size limit in bytes (64 MiB); a larger response fails the exchange"},
	},
	Headers: []component.Header{
		{Name: HeaderHTTPURI, Type: "string", Use: component.Reads, Role: component.ProducerOnly,
			Description: "the target URL, with bridgeEndpoint=true"},
		{Name: exchange.HeaderHTTPResponseCode, Type: "int", Use: component.Writes, Role: component.ProducerOnly,
			Description: "the response status"},
		{Name: "*", Type: "string", Use: component.ReadsWrites, Role: component.ProducerOnly,
			Description: "any other header: exchange headers that can be HTTP headers (Authorization, X-…) are sent with the request; the response headers replace them (first value of each)"},
	},
	Examples: []component.Example{
		{URI: "http://api.internal/users/${body.userId}?timeout=10s", Description: "GET or POST to a URL built from the body"},
		{URI: "https://api.example.com/v1/orders?httpMethod=PUT&throwExceptionOnFailure=false", Description: "PUT; a 4xx or 5xx answer is data, not a failure"},
		{URI: "http://dynamic?bridgeEndpoint=true", Description: "the URL comes from HelixHttpUri or the body's url field"},
	},
	Since: "0.1",
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
