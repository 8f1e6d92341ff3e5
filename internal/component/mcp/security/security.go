package security

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxBodyBytes is the request body limit when Config.MaxBodyBytes is 0.
// MCP requests are small JSON-RPC messages; 4 MiB leaves room for large tool
// arguments while keeping one request from exhausting memory.
const DefaultMaxBodyBytes int64 = 4 << 20

// Realm is the realm announced in WWW-Authenticate challenges.
const Realm = "helix-mcp"

// Config is the security configuration of one MCP server. The zero value is
// an open server with the default body limit: no keys, no rate limit, no CORS
// headers, every tool allowed.
type Config struct {
	// APIKeys are accepted as "Authorization: Bearer <key>" or
	// "X-API-Key: <key>". The caller resolves ${env:…} before calling New; an
	// empty entry is an error because it almost always is an unset variable.
	APIKeys []string
	// APIKeyPrincipals name the caller of each key, by index into APIKeys
	// (shorter or nil: the rest are nameless). The name and roles reach the
	// request's context ([IdentityFromContext]) for gateway policies.
	APIKeyPrincipals []KeyPrincipal
	// TrustedProxies are IP addresses or CIDR prefixes of gateways. A request
	// whose direct peer is listed skips authentication, and only for such a
	// request is X-Forwarded-For believed when identifying the client.
	TrustedProxies []string
	// RateLimit is requests per minute per client (token bucket, burst equal
	// to the limit); 0 switches rate limiting off.
	RateLimit int
	// RateLimitStore, when set with RateLimit, is the redis:// or rediss:// URL
	// of the Redis where the buckets live ("helix:ratelimit:<ServerID>:<client>"),
	// so that every replica with the same ServerID and store takes from one bucket
	// per client. Empty means this process's buckets alone.
	RateLimitStore string
	// RateLimitStoreFallback decides while the store cannot answer (unreachable,
	// or slower than redislimit.DefaultTimeout): FallbackLocal ("" too) with this
	// process's buckets, FallbackRefuse with 503.
	RateLimitStoreFallback string
	// RateLimitStoreFailures, when set, counts the requests the store did not
	// decide (shared by the stacks of one server across restarts, like
	// Rejections); nil means a counter of its own.
	RateLimitStoreFailures *atomic.Uint64
	// AuthFailureLimit is how many failed authentications (401) one client
	// address (IPv6: one /64) may have within AuthFailureWindow; after that its
	// requests get 429 with Retry-After until the window ends, before any key or
	// token is checked. 0 means DefaultAuthFailureLimit, -1 switches the limit
	// off. It only acts when APIKeys or Auth are set.
	AuthFailureLimit int
	// AuthFailureWindow is the window of AuthFailureLimit; 0 means
	// DefaultAuthFailureWindow.
	AuthFailureWindow time.Duration
	// MaxBodyBytes limits the request body: 0 means DefaultMaxBodyBytes, a
	// negative value means unlimited.
	MaxBodyBytes int64
	// CORSOrigins lists browser origins ("http://localhost:3000") allowed to
	// call the server; "*" allows any origin. Empty means no CORS headers are
	// sent at all.
	CORSOrigins []string
	// AllowedTools, when non-empty, is the whitelist of callable tools.
	AllowedTools []string
	// BlockedTools are never listed nor callable; they win over AllowedTools.
	BlockedTools []string
	// Auth switches on OAuth 2.1 resource-server mode (JWT bearer tokens).
	Auth *OAuthConfig
	// ServerID names the server in logs.
	ServerID string
	// Rejections, when set, counts this stack's rejected requests (shared by the
	// stacks of one server across restarts); nil means a counter of its own.
	Rejections *Rejections
	// Logger receives one warning per rejected request; nil means
	// slog.Default().
	Logger *slog.Logger
}

// OAuthConfig configures JWT bearer validation (OAuth 2.1 resource server,
// RFC 9728 metadata).
type OAuthConfig struct {
	// Issuer is the authorization server; the token's iss must equal it.
	Issuer string
	// Audience must appear in the token's aud. Defaults to ResourceURL.
	Audience string
	// JWKSURL is where the issuer's signing keys are fetched (RS*, PS*, ES*).
	JWKSURL string
	// Scopes maps a tool (raw id or MCP name) to the scopes a token needs to
	// list or call it; the key "*" applies to every tool.
	Scopes map[string][]string
	// ResourceURL is this server's public MCP URL ("https://mcp.example.com/mcp")
	// announced in the protected-resource metadata. When empty it is derived
	// from each request's scheme, Host and path.
	ResourceURL string
	// RolesClaim is the claim that lists the caller's roles (Claims.Roles): a
	// list of strings or one space-separated string; a dotted name walks into
	// nested objects (realm_access.roles). "" means "roles".
	RolesClaim string
}

// KeyPrincipal is who an API key stands for.
type KeyPrincipal struct {
	Name  string
	Roles []string
}

// Stack is the security middleware of one MCP server. Build it with [New];
// all methods are safe for concurrent use. Close releases the rate limiter's
// janitor goroutine.
type Stack struct {
	id      string
	log     *slog.Logger
	maxBody int64 // < 0: unlimited
	keys    []keyDigest
	keyWho  []KeyPrincipal // by key index; shorter than keys when not all are named
	proxies []netip.Prefix
	cors    *corsPolicy
	tools   toolFilter
	oauth   *oauthVerifier
	limiter *limiterStore // this process's buckets; nil: no rate limit
	rate    Limiter       // decides: limiter, or the shared store in front of it
	store   namedLimiter  // the shared store, closed with the stack; nil: none
	fails   *failureStore // nil: no authentication
	now     func() time.Time
	rejects *Rejections

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// options are knobs tests turn; production uses defaultOptions.
type options struct {
	now           func() time.Time
	maxBuckets    int
	idleAfter     time.Duration
	sweepInterval time.Duration
	httpClient    *http.Client
	// jwksMaxWait bounds how long a token waits for a JWKS fetch in flight.
	jwksMaxWait time.Duration
	// storeTimeout bounds one decision of the shared store (0: its default);
	// storeClock replaces the Redis server's clock (nil in production).
	storeTimeout time.Duration
	storeClock   func() time.Time
}

func defaultOptions() options {
	return options{
		now:           time.Now,
		maxBuckets:    100_000,
		idleAfter:     10 * time.Minute,
		sweepInterval: time.Minute,
		httpClient:    &http.Client{Timeout: 10 * time.Second},
		jwksMaxWait:   jwksMaxWait,
	}
}

// New validates cfg and builds the stack. It performs no I/O: JWKS keys are
// fetched on the first token, and a RateLimitStore is connected to on the first
// request. When RateLimit > 0 a janitor goroutine evicts idle client buckets
// until Close, which also closes the store's connections.
func New(cfg Config) (*Stack, error) {
	return newStack(cfg, defaultOptions())
}

func newStack(cfg Config, o options) (*Stack, error) {
	s := &Stack{
		id:      cfg.ServerID,
		log:     cfg.Logger,
		now:     o.now,
		rejects: cfg.Rejections,
		stop:    make(chan struct{}),
	}
	if s.rejects == nil {
		s.rejects = &Rejections{}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	var errs []error
	switch {
	case cfg.MaxBodyBytes == 0:
		s.maxBody = DefaultMaxBodyBytes
	case cfg.MaxBodyBytes < 0:
		s.maxBody = -1
	default:
		s.maxBody = cfg.MaxBodyBytes
	}
	for i, k := range cfg.APIKeys {
		if k == "" {
			errs = append(errs, fmt.Errorf("api_keys[%d] is empty (is the ${env:...} variable unset?)", i))
			continue
		}
		s.keys = append(s.keys, digestKey(k))
	}
	if len(cfg.APIKeyPrincipals) > len(cfg.APIKeys) {
		errs = append(errs, fmt.Errorf("%d api key principals for %d api_keys", len(cfg.APIKeyPrincipals), len(cfg.APIKeys)))
	}
	s.keyWho = cfg.APIKeyPrincipals
	proxies, err := parseProxies(cfg.TrustedProxies)
	if err != nil {
		errs = append(errs, err)
	}
	s.proxies = proxies
	if len(cfg.CORSOrigins) > 0 {
		c, err := newCORSPolicy(cfg.CORSOrigins)
		if err != nil {
			errs = append(errs, err)
		}
		s.cors = c
	}
	if cfg.RateLimit < 0 {
		errs = append(errs, fmt.Errorf("rate_limit must be >= 0 (requests per minute, 0 = off), got %d", cfg.RateLimit))
	}
	if cfg.AuthFailureLimit < -1 {
		errs = append(errs, fmt.Errorf("auth_failure_limit must be a number of failures, 0 for the default (%d) or -1 for no limit, got %d",
			DefaultAuthFailureLimit, cfg.AuthFailureLimit))
	}
	if cfg.AuthFailureWindow < 0 {
		errs = append(errs, fmt.Errorf("auth_failure_window must not be negative, got %s", cfg.AuthFailureWindow))
	}
	if cfg.Auth != nil {
		v, err := newOAuthVerifier(*cfg.Auth, o.httpClient, o.now, o.jwksMaxWait)
		if err != nil {
			errs = append(errs, err)
		}
		s.oauth = v
	}
	tf, err := newToolFilter(cfg.AllowedTools, cfg.BlockedTools, cfg.Auth)
	if err != nil {
		errs = append(errs, err)
	}
	s.tools = tf
	var store namedLimiter
	if cfg.RateLimit > 0 && cfg.RateLimitStore != "" {
		st, err := openStore(cfg, o)
		if err != nil {
			errs = append(errs, err)
		} else {
			store = st
		}
	} else if cfg.RateLimitStore != "" {
		if err := CheckRateLimitStore(cfg.RateLimitStore); err != nil {
			errs = append(errs, err)
		}
	}
	if err := checkFallback(cfg.RateLimitStoreFallback); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		if store != nil {
			_ = store.Close()
		}
		return nil, fmt.Errorf("mcp server %q security: %w", cfg.ServerID, errors.Join(errs...))
	}
	if len(s.keys) > 0 || s.oauth != nil {
		// With the limit off (-1) failures are still counted, for sampled logs.
		limit, window := cfg.AuthFailureLimit, cfg.AuthFailureWindow
		switch {
		case limit == 0:
			limit = DefaultAuthFailureLimit
		case limit < 0:
			limit = 0
		}
		if window == 0 {
			window = DefaultAuthFailureWindow
		}
		s.fails = newFailureStore(limit, window, o.maxBuckets)
	}
	if cfg.RateLimit > 0 {
		s.limiter = newLimiterStore(cfg.RateLimit, o.maxBuckets, o.idleAfter, o.now)
		s.rate = s.limiter
		if store != nil {
			s.rate, s.store = newStoreLimiter(cfg, store, s.limiter, o.now, s.log), store
		}
		s.wg.Add(1)
		go s.janitor(o.sweepInterval)
	}
	return s, nil
}

// janitor evicts idle client buckets so that the map only holds clients seen
// recently; the hard cap in limiterStore bounds it between sweeps.
func (s *Stack) janitor(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.limiter.sweep(s.now())
		}
	}
}

// openStore builds the shared store of cfg.RateLimitStore (no I/O).
func openStore(cfg Config, o options) (namedLimiter, error) {
	k, err := storeKindOf(cfg.RateLimitStore)
	if err != nil {
		return nil, err
	}
	return k.open(storeOptions{URL: cfg.RateLimitStore, PerMinute: cfg.RateLimit,
		Namespace: "helix:ratelimit:" + cfg.ServerID + ":", Timeout: o.storeTimeout, Clock: o.storeClock})
}

// Close stops the janitor goroutine, ends a JWKS fetch in flight and closes the
// rate-limit store's connections. It is idempotent; the middleware keeps working
// afterwards (idle buckets are then only bounded by the cap; a closed store
// fails, so its fallback decides).
func (s *Stack) Close() {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		if s.store != nil {
			_ = s.store.Close()
		}
		if s.oauth != nil {
			s.oauth.jwks.close()
		}
	})
}

// MaxBodyBytes is the effective body limit (-1: unlimited). Pass it to the
// go-sdk's StreamableHTTPOptions.MaxRequestBodyBytes so the SDK's own 4 MiB
// default does not undercut a larger configured limit.
func (s *Stack) MaxBodyBytes() int64 { return s.maxBody }

// Middleware wraps next (the MCP transport handler) with the security layers.
func (s *Stack) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, next)
	})
}

// request carries what the layers learn about one request.
type request struct {
	peer       netip.Addr // direct TCP peer
	client     netip.Addr // peer, or the forwarded client behind a trusted proxy
	viaTrusted bool       // peer is a trusted proxy
}

func (q *request) clientString() string {
	if !q.client.IsValid() {
		return "unknown"
	}
	return q.client.String()
}

// clientKey identifies the client for rate limits: its address, or for IPv6 its
// /64. A host is routinely given a whole /64, so counting single IPv6 addresses
// would hand an attacker 2^64 fresh buckets.
func (q *request) clientKey() string {
	if !q.client.IsValid() {
		return "ip:unknown"
	}
	if q.client.Is6() {
		return "ip:" + netip.PrefixFrom(q.client, 64).Masked().String()
	}
	return "ip:" + q.client.String()
}

func (s *Stack) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	q := s.identify(r)

	// 0. DNS rebinding: a web page whose domain was rebound to 127.0.0.1
	// reaches a loopback listener with its own Host name. Trusted proxies are
	// exempt: a reverse proxy on the same host forwards the public Host.
	if !q.viaTrusted && reboundHost(r) {
		s.reject(w, r, q, http.StatusForbidden, "non-loopback Host on a loopback listener (DNS rebinding?)", "host", r.Host)
		return
	}

	// 1. Cheap body check first: a declared oversize body is refused before
	// anything is read, and reads of an undeclared one are capped.
	hasBody := r.Body != nil && r.Body != http.NoBody
	if s.maxBody >= 0 {
		if r.ContentLength > s.maxBody {
			s.reject(w, r, q, http.StatusRequestEntityTooLarge, "request body too large",
				"content_length", r.ContentLength, "limit", s.maxBody)
			return
		}
		if hasBody {
			r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		}
	}

	// 2. Protected-resource metadata is public: clients fetch it to learn how
	// to authenticate.
	if s.oauth != nil && isMetadataPath(r.URL.Path) {
		if !s.allowRate(w, r, q, q.clientKey()) {
			return
		}
		s.oauth.serveMetadata(w, r, q.viaTrusted)
		return
	}

	// 3. Origin and CORS before auth: a foreign Origin is refused whatever
	// else is configured (origin.go); browsers send preflights without
	// credentials, and error responses need CORS headers for the page to read.
	if reason := originRefusal(r, s.cors); reason != "" {
		if s.cors != nil {
			w.Header().Add("Vary", "Origin")
		}
		s.reject(w, r, q, http.StatusForbidden, reason, "origin", r.Header.Get("Origin"))
		return
	}
	if s.cors != nil && s.cors.handle(w, r) == corsAnswered {
		return
	}

	// 4. Authentication, unless this client failed it too often lately: a
	// locked-out client is refused before its key or token is looked at.
	if s.authLockedOut(w, r, q) {
		return
	}
	p, ok := s.authenticate(w, r, q)
	if !ok {
		return
	}

	// 5. Rate limit per authenticated principal (or client IP).
	if !s.allowRate(w, r, q, p.id) {
		return
	}

	// 6. Buffer the body so that an oversize body without Content-Length is
	// refused here with 413 instead of failing half-way inside the MCP handler.
	if s.maxBody >= 0 && hasBody {
		buf, err := io.ReadAll(r.Body)
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				s.reject(w, r, q, http.StatusRequestEntityTooLarge, "request body too large", "limit", s.maxBody)
				return
			}
			s.reject(w, r, q, http.StatusBadRequest, "reading request body failed", "error", err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(buf))
		r.ContentLength = int64(len(buf))
	}

	// The MCP transports bind sessions to this principal (PrincipalFromContext).
	r = r.WithContext(withIdentity(withPrincipal(r.Context(), p), s.identity(p)))
	if p.claims != nil {
		s.serveWithClaims(w, r, next, p)
		return
	}
	next.ServeHTTP(w, r)
}

// Rejections returns the stack's rejection counts by reason (the logged reason
// without its detail), sorted by reason.
func (s *Stack) Rejections() []RejectionCount { return s.rejects.Snapshot() }

// reject writes an error response, logs and counts it. Secrets never reach the log:
// callers pass reasons and indexes, not keys or tokens.
func (s *Stack) reject(w http.ResponseWriter, r *http.Request, q request, status int, reason string, attrs ...any) {
	s.rejectAt(slog.LevelWarn, w, r, q, status, reason, attrs...)
}

// rejectAt is reject with the log level chosen by the caller (repeated
// authentication failures are logged at debug level; see authFailed).
func (s *Stack) rejectAt(level slog.Level, w http.ResponseWriter, r *http.Request, q request, status int, reason string, attrs ...any) {
	args := append([]any{
		"server", s.id,
		"client", q.clientString(),
		"method", r.Method,
		"path", r.URL.Path,
		"status", status,
		"reason", reason,
	}, attrs...)
	if q.viaTrusted {
		args = append(args, "proxy", q.peer.String())
	}
	s.log.Log(r.Context(), level, "mcp request rejected", args...)
	s.rejects.add(reason)
	http.Error(w, http.StatusText(status)+": "+reason, status)
}

// authLockedOut answers 429 when q's client address had too many failed
// authentications in the current window. The lockout was announced as a warning
// when it began (authFailed); its refusals are logged at debug level, counted,
// and their number is reported with the first failure of the next window.
func (s *Stack) authLockedOut(w http.ResponseWriter, r *http.Request, q request) bool {
	if s.fails == nil || q.viaTrusted {
		return false
	}
	wait, blocked := s.fails.blocked(q.clientKey(), s.now())
	if !blocked {
		return false
	}
	secs := retryAfterSeconds(wait)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	s.rejectAt(slog.LevelDebug, w, r, q, http.StatusTooManyRequests, "too many failed authentications", "retry_after_s", secs)
	return true
}

// authFailed records a failed authentication of q's client and says how to log
// its rejection: the first failure of a window as a warning (with what the last
// window refused), the one that reaches the limit as a warning announcing the
// lockout, the others at debug level. Every one is counted.
func (s *Stack) authFailed(q request) (slog.Level, []any) {
	if s.fails == nil {
		return slog.LevelWarn, nil
	}
	n, refusedBefore := s.fails.failure(q.clientKey(), s.now())
	switch {
	case n == s.fails.limit:
		s.log.Warn("mcp client locked out: too many failed authentications", "server", s.id, "client", q.clientString(),
			"failures", n, "window", s.fails.window.String())
		return slog.LevelDebug, nil
	case n == 1 && refusedBefore > 0:
		return slog.LevelWarn, []any{"refused_last_window", refusedBefore}
	case n == 1:
		return slog.LevelWarn, nil
	}
	return slog.LevelDebug, []any{"failures_in_window", n}
}

func retryAfterSeconds(wait time.Duration) int64 {
	secs := int64((wait + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return secs
}

// allowRate applies the per-client token bucket; it answers 429 itself, or 503
// when the shared store cannot decide and the fallback is to refuse (logged at
// debug level: the store's failure is the warning, sampled).
func (s *Stack) allowRate(w http.ResponseWriter, r *http.Request, q request, key string) bool {
	if s.rate == nil {
		return true
	}
	ok, wait, err := s.rate.Allow(r.Context(), key)
	if err != nil {
		if r.Context().Err() != nil {
			return false // the client is gone: nobody to answer
		}
		w.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(storePause), 10))
		s.rejectAt(slog.LevelDebug, w, r, q, http.StatusServiceUnavailable, ErrStoreUnavailable.Error())
		return false
	}
	if ok {
		return true
	}
	secs := retryAfterSeconds(wait)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	s.reject(w, r, q, http.StatusTooManyRequests, "rate limit exceeded", "retry_after_s", secs)
	return false
}
