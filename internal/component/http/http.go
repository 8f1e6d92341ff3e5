// Package http implements the http:// and https:// producers: send the exchange as an
// HTTP request and make the response the new in-message.
//
//	target: http://api.internal/users/${body.userId}?timeout=10s
//
// The request URL is the endpoint URI without Helix's own options (query parameters
// that are not options below are sent as they are).
//
// Method: the httpMethod option when set, otherwise POST when the body is not nil and
// GET when it is. The HelixHttpMethod header is deliberately ignored: in a workflow
// triggered by http-server:// it holds the method of the inbound request, and reusing
// it for an unrelated outbound call (Camel does) surprises more than it helps. GET and
// HEAD requests carry no body.
//
// Body: string and []byte as they are (Content-Type from the exchange, else
// text/plain or application/octet-stream); maps, lists, numbers and bools as JSON with
// Content-Type application/json (a JSON Content-Type on the exchange, such as
// application/vnd.api+json, is kept).
//
// Headers: every exchange header that can be an HTTP header is sent (Authorization,
// X-…, Accept …); Helix* headers and connection/framing headers (Host, Content-Length,
// Accept-Encoding, Connection …) are not. Like in Camel, a workflow triggered by
// http-server:// therefore forwards the inbound request's headers unless it removes
// them.
//
// Response: the body becomes the response text, decoded into a map/list when the
// response Content-Type is JSON and the text parses (nil when empty); the header
// HelixHttpResponseCode holds the status (int) and the response headers are copied
// onto the exchange (first value of each; a Content-Type left from before is removed
// when the response has none).
//
// The options (httpMethod, timeout, throwExceptionOnFailure, bridgeEndpoint,
// maxResponseBytes) and headers are declared in spec.go ([Spec]); a non-2xx status
// fails the exchange with a [StatusError] naming the status and the first 512 bytes
// of the body unless throwExceptionOnFailure=false.
//
// With bridgeEndpoint=true the endpoint's own address (http://dynamic) is a
// placeholder: the URL is taken from the header HelixHttpUri, or else from a map body
// with a "url" field. A map body with "url" describes the whole request: "url",
// optional "method", "headers" (map) and "body"; without "body" the request has none,
// so {"url": "http://svc/health"} (spec §12.2 check-health) is a GET.
package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/internal/tracing"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Defaults of the endpoint options.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 64 << 20
)

// Options configure a Component; the zero value (or nil) means defaults.
type Options struct {
	// Transport sends the requests; nil means a transport of Helix's own with pooled
	// connections and sane timeouts, shared by all endpoints of the component.
	Transport nethttp.RoundTripper
}

// Component is the http:// and https:// component (register one instance under both
// schemes so they share the connection pool). Safe for concurrent use.
type Component struct {
	transport nethttp.RoundTripper
}

var (
	_ component.Component = (*Component)(nil)
	_ component.Lifecycle = (*Component)(nil)
)

// New returns an http component.
func New(opts *Options) *Component {
	c := &Component{}
	if opts != nil && opts.Transport != nil {
		c.transport = opts.Transport
	} else {
		c.transport = newTransport()
	}
	return c
}

func newTransport() *nethttp.Transport {
	return &nethttp.Transport{
		Proxy:                 nethttp.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: 0, // bounded by the endpoint timeout instead
	}
}

// Start is part of component.Lifecycle; there is nothing to open.
func (c *Component) Start(context.Context) error { return nil }

// Stop closes idle pooled connections (and so their goroutines).
func (c *Component) Stop(context.Context) error {
	c.closeIdle()
	return nil
}

func (c *Component) closeIdle() {
	if ci, ok := c.transport.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// uriOptions are the URI's options (see Spec); the other query parameters are sent
// to the server.
type uriOptions struct {
	HTTPMethod              string        `option:"httpMethod"`
	Timeout                 time.Duration `option:"timeout"`
	ThrowExceptionOnFailure bool          `option:"throwExceptionOnFailure"`
	BridgeEndpoint          bool          `option:"bridgeEndpoint"`
	MaxResponseBytes        int64         `option:"maxResponseBytes"`
	Query                   url.Values    `option:",extra"`
}

var uriBinding = component.Bind[uriOptions](Spec)

// CreateEndpoint validates the options and the URL.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%s: the http component serves http:// and https://, not %s://", redact.URL(u.Raw), u.Scheme)
	}
	opts, err := uriBinding.Parse(u)
	if err != nil {
		return nil, err
	}
	e := &endpoint{raw: u.Raw, shown: redact.URL(u.Raw), timeout: opts.Timeout, throw: opts.ThrowExceptionOnFailure,
		bridge: opts.BridgeEndpoint, maxResp: opts.MaxResponseBytes}
	if e.timeout <= 0 {
		return nil, fmt.Errorf("option timeout=%s must be positive", e.timeout)
	}
	if e.maxResp <= 0 {
		return nil, fmt.Errorf("option maxResponseBytes=%d must be a positive number of bytes", e.maxResp)
	}
	if e.method = strings.ToUpper(opts.HTTPMethod); e.method != "" && !validMethod(e.method) {
		return nil, fmt.Errorf("option httpMethod=%q is not an HTTP method", e.method)
	}
	if !e.bridge {
		target := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawQuery: opts.Query.Encode()}
		// The path is written in URI form: its %XX escapes (those of a placeholder's
		// value among them) are kept as they are, not escaped a second time.
		if p, err := url.PathUnescape(u.Path); err == nil {
			target.Path, target.RawPath = p, u.Path
		}
		if u.Host == "" {
			return nil, fmt.Errorf("no host: want %s://host[:port]/path", u.Scheme)
		}
		if strings.Contains(u.Host, "@") {
			// Not echoed: the user info is a password or a token.
			return nil, errors.New("user info (user:password@) in an http:// URL is not supported: send the credentials in a header instead, for example set-header: {name: Authorization, constant: \"Basic ${env:CREDENTIALS}\"} before the step")
		}
		parsed, err := url.Parse(target.String())
		if err != nil {
			return nil, maskURLs(fmt.Errorf("invalid URL: %w", err))
		}
		e.url = parsed
	}
	// One client per endpoint (its own redirect policy and timeout could diverge),
	// all over the component's pooled transport.
	e.client = &nethttp.Client{Transport: c.transport}
	e.c = c
	return e, nil
}

func validMethod(m string) bool {
	return m != "" && validFieldName(m)
}

type endpoint struct {
	c       *Component
	raw     string
	shown   string   // raw as errors show it: query values and password masked
	url     *url.URL // nil with bridgeEndpoint
	method  string
	timeout time.Duration
	throw   bool
	bridge  bool
	maxResp int64
	client  *nethttp.Client
}

func (e *endpoint) URI() string { return e.raw }

func (e *endpoint) CreateProducer() (component.Producer, error) { return &producer{e: e}, nil }

func (e *endpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, component.ErrProducerOnly
}

type producer struct {
	e *endpoint
}

func (p *producer) Start(context.Context) error { return nil }

// Stop closes idle connections of the shared pool; requests in flight are not
// affected (the engine drains them before stopping producers).
func (p *producer) Stop(context.Context) error {
	p.e.c.closeIdle()
	return nil
}

// request is what will be sent, before it becomes an *http.Request.
type request struct {
	url     string
	method  string
	body    any
	headers map[string]any
}

// Process sends one request. Safe for concurrent use.
func (p *producer) Process(ctx context.Context, ex *exchange.Exchange) (err error) {
	e := p.e
	rq, err := e.describe(ex)
	if err != nil {
		return fmt.Errorf("%s: %w", e.shown, err)
	}
	payload, contentType, err := encodeBody(rq.body, exchange.Stringify(lookupHeader(rq.headers, "Content-Type")))
	if err != nil {
		return fmt.Errorf("%s: %w", e.shown, err)
	}
	if rq.method == nethttp.MethodGet || rq.method == nethttp.MethodHead {
		payload, contentType = nil, ""
	}
	ctx, cancel := context.WithTimeoutCause(ctx, e.timeout, errTimeout)
	defer cancel()
	ctx, span := startClientSpan(ctx, rq.method, rq.url) // tracing.go; does nothing with tracing off
	status := 0
	defer func() { endClientSpan(span, status, err) }()
	var bodyReader io.Reader
	if payload != nil {
		bodyReader = bytes.NewReader(payload)
	}
	req, err := nethttp.NewRequestWithContext(ctx, rq.method, rq.url, bodyReader)
	if err != nil {
		return maskURLs(fmt.Errorf("%s: build request: %w", e.shown, err))
	}
	for k, v := range rq.headers {
		if !OutboundHeader(k) || strings.EqualFold(k, "Accept-Encoding") || strings.EqualFold(k, "Set-Cookie") {
			// Accept-Encoding: leave compression to the transport, which then decodes
			// the response transparently.
			continue
		}
		if s, ok := HeaderValue(v); ok {
			req.Header.Set(k, s)
		}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	} else if payload == nil {
		req.Header.Del("Content-Type")
	}
	// The client span becomes the server's parent (replacing a traceparent copied
	// from the exchange); with tracing off ctx has no span and nothing changes.
	tracing.InjectHTTP(ctx, req.Header)
	setIdempotencyKey(ctx, req.Header) // idempotency.go
	resp, err := e.client.Do(req)
	if err != nil {
		if errors.Is(context.Cause(ctx), errTimeout) {
			return maskURLs(fmt.Errorf("%s %s: request timed out after %s (option timeout): %w", rq.method, rq.url, e.timeout, err))
		}
		return maskURLs(fmt.Errorf("%s %s: %w", rq.method, rq.url, err))
	}
	defer resp.Body.Close()
	status = resp.StatusCode
	data, err := io.ReadAll(io.LimitReader(resp.Body, e.maxResp+1))
	if err != nil {
		return maskURLs(fmt.Errorf("%s %s: read response: %w", rq.method, rq.url, err))
	}
	if int64(len(data)) > e.maxResp {
		return fmt.Errorf("%s %s: response larger than %d bytes (option maxResponseBytes)", rq.method, redact.URL(rq.url), e.maxResp)
	}
	m := ex.In()
	if resp.Header.Get("Content-Type") == "" {
		removeHeader(m, "Content-Type")
	}
	for k, vs := range resp.Header {
		if len(vs) > 0 && !IsHelixHeader(k) {
			removeHeader(m, k)
			m.SetHeader(k, vs[0])
		}
	}
	m.RemoveHeader("Content-Length")
	m.SetHeader(exchange.HeaderHTTPResponseCode, resp.StatusCode)
	m.SetBody(decodeResponse(data, resp.Header.Get("Content-Type")))
	if e.throw && (resp.StatusCode < 200 || resp.StatusCode > 299) {
		return &StatusError{Method: rq.method, URL: redact.URL(rq.url), StatusCode: resp.StatusCode, Body: truncate(string(data), MaxErrorBodyBytes)}
	}
	return nil
}

// maskedError is an error whose text has the URLs masked (redact.URLsIn): net/http
// and net/url put the whole request URL into their errors, query and password
// included. Unwrap keeps errors.Is working (timeouts, cancellation).
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

func maskURLs(err error) error {
	return &maskedError{msg: redact.URLsIn(err.Error()), err: err}
}

// quoteURL quotes a URL given at run time for an error: masked when it is one, and
// not shown at all when it is not (there is then no telling where a secret sits).
func quoteURL(raw string) string {
	if !strings.Contains(raw, "://") {
		return fmt.Sprintf("(%d bytes, not shown)", len(raw))
	}
	return strconv.Quote(redact.URL(raw))
}

// errTimeout is the cause of the endpoint's own timeout, told apart from the caller's
// cancellation so that the message can blame the right thing.
var errTimeout = fmt.Errorf("http endpoint timeout: %w", context.DeadlineExceeded)

// MaxErrorBodyBytes bounds the excerpt of a failed response's body in a [StatusError].
const MaxErrorBodyBytes = 512

// StatusError is returned for non-2xx responses unless throwExceptionOnFailure=false.
// The exchange still holds the response (body, headers, HelixHttpResponseCode).
type StatusError struct {
	Method     string
	URL        string // query values and password masked (redact.URL)
	StatusCode int
	Body       string // the start of the response body
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %d %s", e.Method, e.URL, e.StatusCode, nethttp.StatusText(e.StatusCode))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// describe works out URL, method, body and headers of the request.
func (e *endpoint) describe(ex *exchange.Exchange) (*request, error) {
	m := ex.In()
	rq := &request{body: m.Body(), headers: m.Headers()}
	switch {
	case !e.bridge:
		rq.url = e.url.String()
	case m.HeaderString(HeaderHTTPURI) != "":
		rq.url = m.HeaderString(HeaderHTTPURI)
	default:
		desc, ok := m.Body().(map[string]any)
		u, _ := desc["url"].(string)
		if !ok || u == "" {
			return nil, fmt.Errorf("bridgeEndpoint=true needs the target URL in header %s or in a body field \"url\"", HeaderHTTPURI)
		}
		rq.url = u
		rq.body = desc["body"]
		if mth, ok := desc["method"].(string); ok && mth != "" {
			rq.method = strings.ToUpper(mth)
		}
		if hs, ok := desc["headers"].(map[string]any); ok {
			merged := make(map[string]any, len(rq.headers)+len(hs))
			for k, v := range rq.headers {
				merged[k] = v
			}
			for k, v := range hs {
				merged[k] = v
			}
			rq.headers = merged
		}
	}
	if e.bridge {
		pu, err := url.Parse(rq.url)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, fmt.Errorf("bridged URL %s is not an absolute http(s) URL", quoteURL(rq.url))
		}
	}
	if rq.method == "" {
		rq.method = e.method
	}
	if rq.method == "" {
		rq.method = nethttp.MethodGet
		if rq.body != nil {
			rq.method = nethttp.MethodPost
		}
	}
	if !validMethod(rq.method) {
		return nil, fmt.Errorf("%q is not an HTTP method", rq.method)
	}
	return rq, nil
}

// encodeBody renders the request body and picks its Content-Type; ct is the
// Content-Type header already on the exchange ("" when none).
func encodeBody(body any, ct string) ([]byte, string, error) {
	switch b := body.(type) {
	case nil:
		return nil, "", nil
	case string:
		return []byte(b), orDefault(ct, "text/plain; charset=utf-8"), nil
	case []byte:
		return b, orDefault(ct, "application/octet-stream"), nil
	case json.RawMessage:
		return b, "application/json", nil
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, "", fmt.Errorf("encode request body as JSON: %w", err)
		}
		if !IsJSON(ct) {
			ct = "application/json"
		}
		return data, ct, nil
	}
}

func decodeResponse(data []byte, contentType string) any {
	if len(data) == 0 {
		return nil
	}
	if IsJSON(contentType) {
		var v any
		if err := json.Unmarshal(data, &v); err == nil {
			return v
		}
	}
	return string(data)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// lookupHeader finds a header whatever the case of its name.
func lookupHeader(h map[string]any, name string) any {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// removeHeader deletes every spelling of name, so that a response header replaces a
// differently-cased one from before.
func removeHeader(m *exchange.Message, name string) {
	for k := range m.Headers() {
		if strings.EqualFold(k, name) {
			m.RemoveHeader(k)
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) { // do not cut a character in two
		n--
	}
	return s[:n] + "…"
}
