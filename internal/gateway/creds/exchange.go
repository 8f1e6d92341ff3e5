package creds

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// RFC 8693 names.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
)

// Defaults of Options.
const (
	defaultExchangeTimeout = 10 * time.Second
	defaultExpiryMargin    = 30 * time.Second
	defaultMaxCached       = 10000
)

// maxDescription bounds how much of a token service's error_description a
// caller is shown.
const maxDescription = 200

// exchange trades the caller's token for one of the upstream at a security token
// service, and keeps what it got until shortly before it expires.
type exchange struct {
	upstream string
	conf     clientcredentials.Config
	client   *http.Client
	now      func() time.Time
	margin   time.Duration
	max      int

	mu       sync.Mutex
	cache    map[[32]byte]cached
	inflight map[[32]byte]*flight
}

// cached is an exchanged token and when it stops being reused.
type cached struct {
	token string
	until time.Time
}

// flight is one exchange under way, shared by the calls with the same token.
type flight struct {
	done  chan struct{}
	token string
	err   error
	// waiters counts the calls that joined it (under exchange.mu), so that a
	// test can tell when a call is waiting.
	waiters int
}

func newExchange(cfg config.UpstreamConfig, opts Options) *exchange {
	te := cfg.TokenExchange
	params := url.Values{
		"grant_type":         {grantTokenExchange},
		"subject_token_type": {tokenTypeAccess},
	}
	audience := te.Audience
	if audience == "" {
		audience = cfg.Audience
	}
	if audience != "" {
		params.Set("audience", audience)
	}
	if te.Resource != "" {
		params.Set("resource", te.Resource)
	}
	style := oauth2.AuthStyleInHeader // client_secret_basic, the default of RFC 6749
	if te.ClientSecret == "" {
		style = oauth2.AuthStyleInParams // a public client names itself in the form
	}
	e := &exchange{
		upstream: cfg.ID,
		conf: clientcredentials.Config{
			ClientID: te.ClientID, ClientSecret: te.ClientSecret, TokenURL: te.TokenURL,
			Scopes: te.Scopes, EndpointParams: params, AuthStyle: style,
		},
		client:   opts.HTTPClient,
		now:      opts.Now,
		margin:   opts.ExpiryMargin,
		max:      opts.MaxCached,
		cache:    map[[32]byte]cached{},
		inflight: map[[32]byte]*flight{},
	}
	if e.client == nil {
		e.client = &http.Client{
			Timeout: defaultExchangeTimeout,
			// A redirect would re-send the form (the caller's token, perhaps the
			// client secret) to wherever the token service points: never follow.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.margin <= 0 {
		e.margin = defaultExpiryMargin
	}
	if e.max <= 0 {
		e.max = defaultMaxCached
	}
	return e
}

// Header returns the exchanged token for p's token, from the cache or from one
// exchange shared by every call that needs the same token at the same time.
func (e *exchange) Header(ctx context.Context, p *gateway.Principal) (http.Header, error) {
	if p == nil || p.Token == "" {
		return nil, refuse("upstream %s takes a token exchanged for the caller's OAuth token, and this call came without one", e.upstream)
	}
	key := sha256.Sum256([]byte(p.Token)) // the cache holds no caller's token
	e.mu.Lock()
	if c, ok := e.cache[key]; ok && e.now().Before(c.until) {
		e.mu.Unlock()
		return bearer(c.token), nil
	}
	f, leader := e.inflight[key]
	if !leader {
		f = &flight{done: make(chan struct{})}
		e.inflight[key] = f
	}
	f.waiters++
	e.mu.Unlock()
	if !leader {
		// The exchange must not end with the call that started it: the others
		// wait for it too. The HTTP client's timeout bounds it.
		go e.run(context.WithoutCancel(ctx), key, p.Token, f)
	}
	select {
	case <-f.done:
		if f.err != nil {
			return nil, f.err
		}
		return bearer(f.token), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run does one exchange and publishes its result to the cache and the waiters.
func (e *exchange) run(ctx context.Context, key [32]byte, subjectToken string, f *flight) {
	tok, err := e.exchange(ctx, subjectToken)
	e.mu.Lock()
	delete(e.inflight, key)
	if err == nil {
		f.token = tok.AccessToken
		// Without expires_in the token's life is unknown: it is used for this
		// call and those that waited for it, never kept.
		if !tok.Expiry.IsZero() {
			if until := tok.Expiry.Add(-e.margin); e.now().Before(until) {
				e.store(key, cached{token: tok.AccessToken, until: until})
			}
		}
	}
	f.err = err
	e.mu.Unlock()
	close(f.done)
}

// store adds c under key; a full cache first drops what expired, then, when
// that was not enough, an arbitrary entry (it is only asked for again).
func (e *exchange) store(key [32]byte, c cached) {
	if len(e.cache) >= e.max {
		now := e.now()
		for k, v := range e.cache {
			if !now.Before(v.until) {
				delete(e.cache, k)
			}
		}
		for k := range e.cache {
			if len(e.cache) < e.max {
				break
			}
			delete(e.cache, k)
		}
	}
	e.cache[key] = c
}

// exchange posts the RFC 8693 request. Its errors say what went wrong without
// the tokens, the client secret or the response body (which may echo them).
func (e *exchange) exchange(ctx context.Context, subjectToken string) (*oauth2.Token, error) {
	conf := e.conf
	conf.EndpointParams = url.Values{"subject_token": {subjectToken}}
	for k, v := range e.conf.EndpointParams {
		conf.EndpointParams[k] = v
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, e.client)
	tok, err := conf.Token(ctx)
	if err == nil {
		if tok.AccessToken == "" {
			return nil, fmt.Errorf("upstream %s: the token service at %s answered no access_token", e.upstream, e.where())
		}
		return tok, nil
	}
	secrets := []string{subjectToken, e.conf.ClientSecret}
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		// No answer (refused, timed out) or one that is no token response.
		return nil, Scrub(fmt.Errorf("upstream %s: token exchange at %s failed: %w", e.upstream, e.where(), withoutURL(err)), secrets...)
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	what := fmt.Sprintf("HTTP %d", status)
	if re.ErrorCode != "" {
		what = oneLine(re.ErrorCode, 64)
		if re.ErrorDescription != "" {
			what += ": " + oneLine(re.ErrorDescription, maxDescription)
		}
	}
	what = scrubText(what, secrets)
	switch re.ErrorCode {
	case "invalid_grant", "invalid_target", "invalid_scope", "access_denied", "unauthorized_client":
		// About the caller's token or what it may get: refuse the call.
		return nil, refuse("upstream %s: the token service refused to exchange the caller's token (%s)", e.upstream, what)
	case "invalid_client":
		return nil, fmt.Errorf("upstream %s: the token service at %s refused the gateway's client credentials (%s): check token_exchange.client_id and client_secret", e.upstream, e.where(), what)
	}
	return nil, fmt.Errorf("upstream %s: token exchange at %s failed (%s)", e.upstream, e.where(), what)
}

// where names the token service by host, enough to find it in the configuration.
func (e *exchange) where() string {
	u, err := url.Parse(e.conf.TokenURL)
	if err != nil || u.Host == "" {
		return "token_url"
	}
	return u.Host
}

// withoutURL drops the URL of a *url.Error (it may carry secrets in its query),
// keeping the operation and the cause.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", strings.ToLower(ue.Op), ue.Err)
	}
	return err
}

// oneLine makes text from a token service fit one line of at most max bytes.
func oneLine(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// SessionKey keeps the sessions of different subjects apart: their exchanged
// tokens differ.
func (e *exchange) SessionKey(p *gateway.Principal) string { return subjectKey(p) }
