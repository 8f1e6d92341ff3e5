package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/arvenza/helix/internal/agent"
)

// sender posts an encoded body to the Chat Completions endpoint as the SDK's
// client posts it, without the SDK's machinery around each request (its option
// layers, header maps, request copies and origin checks cost more than the
// rest of the provider once the body is encoded). The endpoint and the headers
// are those of one request the SDK prepared in New and that never left the
// process, so the SDK still decides them: the base URL (Config.BaseURL, else
// OPENAI_BASE_URL, else OpenAI's), the authentication, the organization and
// project, custom headers from the environment and its own headers.
type sender struct {
	client *http.Client
	url    string
	header http.Header
}

// errPrepared stops the request the SDK prepares for newSender.
var errPrepared = errors.New("prepared")

func newSender(c *sdk.Client, hc *http.Client) (*sender, error) {
	var prepared *http.Request
	capture := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		prepared = r
		return nil, errPrepared
	})}
	err := c.Post(context.Background(), chatPath, []byte("{}"), nil, option.WithHTTPClient(capture))
	if prepared == nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	if hc == nil {
		hc = defaultClient()
	}
	// The SDK refuses to send a request anywhere but the base URL's origin,
	// redirects included (the credentials go with it); so does the provider.
	origin := prepared.URL
	guarded := *hc
	next := hc.CheckRedirect
	guarded.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, origin) {
			return fmt.Errorf("redirect to %s refused: not the origin of the base URL", req.URL.Redacted())
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	header := prepared.Header.Clone()
	header.Del("Content-Length")
	return &sender{client: &guarded, url: prepared.URL.String(), header: header}, nil
}

// defaultClient is the SDK's client when none is given: the default transport
// with a bound on the wait for the response's headers (not on the body, so
// streams may run long).
func defaultClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: http.DefaultTransport}
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// post sends body; a response with an error status is an *agent.ProviderError
// with the provider's message (error.message of its body) and the wait it asked
// for, as the SDK's errors became.
func (s *sender) post(ctx context.Context, body []byte, apiKey string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = s.header.Clone()
	res, err := agent.TraceHeaders(req, s.client.Do)
	if err != nil {
		return nil, err
	}
	if res.StatusCode < 400 {
		return res, nil
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the error response: %w", err)
	}
	var msg string
	if m := gjson.GetBytes(raw, "error.message"); m.Type == gjson.String {
		msg = m.Str
	}
	return nil, agent.NewProviderError("openai", apiKey, res.StatusCode, msg, res)
}

// roundTripFunc is a transport of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
