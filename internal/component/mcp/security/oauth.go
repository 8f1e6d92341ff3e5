package security

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// MetadataPath is where the RFC 9728 protected-resource metadata is served.
// Paths below it (…/oauth-protected-resource/mcp) are served too, because
// clients insert the well-known segment before the resource's path.
const MetadataPath = "/.well-known/oauth-protected-resource"

const (
	// jwtLeeway tolerates clock drift between the issuer and this host.
	jwtLeeway = 30 * time.Second
	// jwksMaxAge re-fetches keys periodically so revoked keys disappear.
	jwksMaxAge = time.Hour
	// jwksMinRefresh throttles re-fetching on an unknown kid: tokens with
	// random kids must not turn the server into a JWKS flooder.
	jwksMinRefresh = 10 * time.Second
	// jwksMaxWait bounds how long a token whose key is not cached waits for a
	// fetch in flight; the fetch itself goes on (up to the HTTP client's
	// timeout) and serves later tokens.
	jwksMaxWait = 5 * time.Second
	// jwksUnknownTTL is how long a kid that a completed fetch did not contain is
	// refused without waiting or fetching again (negative cache). Issuers publish
	// a new key before they sign with it, so such a kid is almost always forged.
	jwksUnknownTTL = time.Minute
	// jwksMaxUnknown bounds the negative cache.
	jwksMaxUnknown = 4096
	// jwksMaxBytes bounds the JWKS document.
	jwksMaxBytes = 1 << 20
)

// Algorithms accepted in tokens; "none" and HMAC never are (a public JWKS
// cannot verify a shared-secret signature).
var jwtAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}

type oauthVerifier struct {
	issuer      string
	audience    string
	resourceURL string
	scopes      []string // scopes_supported
	rolesClaim  []string // the path of the roles claim: ["roles"], ["realm_access", "roles"]
	jwks        *jwksCache
	parser      *jwt.Parser
	now         func() time.Time
}

func newOAuthVerifier(c OAuthConfig, client *http.Client, now func() time.Time, maxWait time.Duration) (*oauthVerifier, error) {
	var errs []error
	if c.Issuer == "" {
		errs = append(errs, errors.New("auth.issuer is required (the authorization server's issuer URL)"))
	}
	if err := checkHTTPURL(c.JWKSURL); err != nil {
		errs = append(errs, fmt.Errorf("auth.jwks_url: %w", err))
	}
	if c.ResourceURL != "" {
		if err := checkHTTPURL(c.ResourceURL); err != nil {
			errs = append(errs, fmt.Errorf("auth.resource_url: %w", err))
		}
	}
	aud := c.Audience
	if aud == "" {
		aud = c.ResourceURL
	}
	if aud == "" {
		errs = append(errs, errors.New("auth.audience is required (or set auth.resource_url): tokens minted for other services must be refused"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var scopes []string
	for _, ss := range c.Scopes {
		for _, sc := range ss {
			if !slices.Contains(scopes, sc) {
				scopes = append(scopes, sc)
			}
		}
	}
	slices.Sort(scopes)
	v := &oauthVerifier{
		issuer:      c.Issuer,
		audience:    aud,
		resourceURL: strings.TrimSuffix(c.ResourceURL, "/"),
		scopes:      scopes,
		rolesClaim:  strings.Split(cmp.Or(c.RolesClaim, "roles"), "."),
		jwks:        newJWKSCache(c.JWKSURL, client, now, maxWait),
		now:         now,
	}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(jwtAlgorithms),
		jwt.WithIssuer(c.Issuer),
		jwt.WithAudience(aud),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(jwtLeeway),
		jwt.WithTimeFunc(now),
	)
	return v, nil
}

func checkHTTPURL(s string) error {
	if s == "" {
		return errors.New("is required")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// tokenError is a refusal whose message is written for the client as is: it
// says what is wrong with the token and names the rule.
type tokenError struct{ msg string }

func (e *tokenError) Error() string { return e.msg }

// errNoSubject refuses a token that names nobody: RFC 9068 §2.2 requires sub in
// an access token, and a principal is issuer + subject.
var errNoSubject = &tokenError{"the token has no sub claim (a non-empty string is required, RFC 9068 section 2.2): it names nobody"}

// checkCrit honours the JOSE crit header (RFC 7515 §4.1.11): it lists header
// extensions the recipient must understand, or reject the token. Helix
// understands none, so a token with crit is refused, malformed or not.
func checkCrit(header map[string]any) error {
	v, ok := header["crit"]
	if !ok {
		return nil
	}
	names, isList := v.([]any)
	if !isList || len(names) == 0 {
		return &tokenError{"the token's crit header must be a non-empty list of header parameter names (RFC 7515 section 4.1.11)"}
	}
	listed := make([]string, 0, len(names))
	for _, n := range names {
		s, isString := n.(string)
		if !isString {
			return &tokenError{"the token's crit header must list header parameter names as strings (RFC 7515 section 4.1.11)"}
		}
		listed = append(listed, s)
	}
	return &tokenError{fmt.Sprintf("the token's crit header lists %s, which this server does not understand (RFC 7515 section 4.1.11)",
		quotedList(listed))}
}

// quotedList renders names for an error message, at most 5 and each at most
// 64 bytes: a hostile header must not make the message huge.
func quotedList(names []string) string {
	const maxNames, maxLen = 5, 64
	var parts []string
	for i, n := range names {
		if i == maxNames {
			parts = append(parts, fmt.Sprintf("and %d more", len(names)-maxNames))
			break
		}
		if len(n) > maxLen {
			n = n[:maxLen] + "..."
		}
		parts = append(parts, strconv.Quote(n))
	}
	return strings.Join(parts, ", ")
}

// verify checks crit, signature, iss, aud, exp, nbf and sub and returns the
// claims.
func (v *oauthVerifier) verify(ctx context.Context, raw string) (*Claims, error) {
	mc := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(raw, mc, func(t *jwt.Token) (any, error) {
		// Before any key lookup: a token we must refuse costs no JWKS fetch.
		if err := checkCrit(t.Header); err != nil {
			return nil, err
		}
		kid, _ := t.Header["kid"].(string)
		k, err := v.jwks.key(ctx, kid, t.Method.Alg())
		if err != nil {
			return nil, err
		}
		return k, nil
	})
	if err != nil {
		var te *tokenError
		if errors.As(err, &te) {
			return nil, te // our own words, without the parser's wrapping
		}
		return nil, err
	}
	c := &Claims{Raw: map[string]any(mc)}
	c.Issuer, _ = mc.GetIssuer() // the parser checked it equals the configured issuer
	sub, err := mc.GetSubject()
	if err != nil || sub == "" {
		return nil, errNoSubject
	}
	c.Subject = sub
	c.Audience, _ = mc.GetAudience()
	if exp, _ := mc.GetExpirationTime(); exp != nil {
		c.ExpiresAt = exp.Time
	}
	c.Scopes = scopesOf(mc)
	c.Roles = rolesOf(mc, v.rolesClaim)
	return c, nil
}

// rolesOf reads the roles claim at path (a list of strings, or one
// space-separated string); nil when the token has none.
func rolesOf(mc jwt.MapClaims, path []string) []string {
	var v any = map[string]any(mc)
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// scopesOf reads "scope" (RFC 8693/9068: space-separated string) and "scp"
// (array or string, used by several identity providers).
func scopesOf(mc jwt.MapClaims) []string {
	var out []string
	add := func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, strings.Fields(v)...)
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	add(mc["scope"])
	add(mc["scp"])
	return out
}

// baseURL is scheme://host of the request as the client addressed it.
// X-Forwarded-Proto is only believed from a trusted proxy.
func baseURL(r *http.Request, viaTrusted bool) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if viaTrusted {
		if p := strings.ToLower(r.Header.Get("X-Forwarded-Proto")); p == "http" || p == "https" {
			scheme = p
		}
	}
	return scheme + "://" + r.Host
}

// metadataURL is the resource_metadata announced in 401 challenges: the
// well-known path inserted before the resource's path (RFC 9728 §3.1).
func (v *oauthVerifier) metadataURL(r *http.Request, viaTrusted bool) string {
	if v.resourceURL != "" {
		u, _ := url.Parse(v.resourceURL) // validated in New
		return u.Scheme + "://" + u.Host + MetadataPath + strings.TrimSuffix(u.Path, "/")
	}
	return baseURL(r, viaTrusted) + MetadataPath + strings.TrimSuffix(r.URL.Path, "/")
}

func isMetadataPath(p string) bool {
	return p == MetadataPath || strings.HasPrefix(p, MetadataPath+"/")
}

// serveMetadata answers GET (and CORS preflight) on the metadata path. The
// document is public and readable from any origin (RFC 9728 §3.1).
func (v *oauthVerifier) serveMetadata(w http.ResponseWriter, r *http.Request, viaTrusted bool) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Mcp-Protocol-Version")
	switch r.Method {
	case http.MethodOptions:
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet, http.MethodHead:
	default:
		h.Set("Allow", "GET, HEAD, OPTIONS")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	resource := v.resourceURL
	if resource == "" {
		resource = baseURL(r, viaTrusted) + strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, MetadataPath), "/")
	}
	md := oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   []string{v.issuer},
		BearerMethodsSupported: []string{"header"},
		ScopesSupported:        v.scopes,
		ResourceName:           Realm,
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=300")
	_ = json.NewEncoder(w).Encode(md)
}

// jwksCache holds the issuer's public keys, fetched lazily and re-fetched when
// stale or when a token names an unknown kid (key rotation).
//
// No lock is held across a fetch, so a slow or hanging JWKS endpoint never
// delays tokens whose key is cached. Fetches are single-flight: a token that
// needs one joins the fetch in flight, and waits for it at most maxWait. Stale
// keys keep serving while a refresh runs in the background. A kid that a
// completed fetch did not contain is remembered for jwksUnknownTTL and refused
// at once (negative cache), and fetches for unknown kids are throttled to one
// per jwksMinRefresh, so tokens with random kids cost neither waits nor fetches.
type jwksCache struct {
	url     string
	client  *http.Client
	now     func() time.Time
	maxWait time.Duration

	// ctx ends with the stack (close): a fetch does not outlive it, and does
	// not depend on the request that started it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex // guards the fields below; never held across a fetch
	keys      []jwk
	fetched   time.Time            // last successful fetch
	attempted time.Time            // last fetch started
	inflight  *jwksFetch           // the fetch running, or nil
	unknown   map[string]time.Time // kid → refused without fetching until
}

// jwksFetch is one fetch; done is closed when it ended, err says how.
type jwksFetch struct {
	done chan struct{}
	err  error
}

// errJWKSPending wraps the error of a token whose key could not be found
// within maxWait because a fetch was still running.
var errJWKSPending = errors.New("the jwks fetch is still running")

func newJWKSCache(url string, client *http.Client, now func() time.Time, maxWait time.Duration) *jwksCache {
	if maxWait <= 0 {
		maxWait = jwksMaxWait
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &jwksCache{url: url, client: client, now: now, maxWait: maxWait, ctx: ctx, cancel: cancel,
		unknown: map[string]time.Time{}}
}

type jwk struct {
	kid string
	alg string
	pub any // *rsa.PublicKey or *ecdsa.PublicKey
}

// close ends a fetch in flight and waits for its goroutine. Later fetches fail
// at once.
func (c *jwksCache) close() {
	c.cancel()
	c.wg.Wait()
}

func (c *jwksCache) key(ctx context.Context, kid, alg string) (any, error) {
	c.mu.Lock()
	now := c.now()
	stale := c.fetched.IsZero() || now.Sub(c.fetched) > jwksMaxAge
	k, err := c.find(kid, alg)
	if err == nil {
		if stale {
			c.startFetchLocked(now) // refresh in the background; the cached key answers now
		}
		c.mu.Unlock()
		return k, nil
	}
	if until, ok := c.unknown[kid]; ok && kid != "" {
		if now.Before(until) {
			c.mu.Unlock()
			return nil, err
		}
		delete(c.unknown, kid)
	}
	f := c.inflight
	if f == nil && (stale || now.Sub(c.attempted) >= jwksMinRefresh) {
		f = c.startFetchLocked(now)
	}
	c.mu.Unlock()
	if f == nil {
		return nil, err // refreshed too recently
	}

	t := time.NewTimer(c.maxWait)
	defer t.Stop()
	select {
	case <-f.done:
	case <-t.C:
		return nil, fmt.Errorf("%w (%w)", err, errJWKSPending)
	case <-ctx.Done():
		return nil, fmt.Errorf("%w (%w)", err, ctx.Err())
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	k, err = c.find(kid, alg)
	if err == nil {
		return k, nil
	}
	if f.err != nil {
		return nil, fmt.Errorf("%w (fetching jwks: %v)", err, f.err)
	}
	if kid != "" {
		c.rememberUnknownLocked(kid, c.now())
	}
	return nil, err
}

// startFetchLocked starts a fetch unless one is running (then it returns that
// one) or the last one started less than jwksMinRefresh ago (then nil). Called
// with mu held.
func (c *jwksCache) startFetchLocked(now time.Time) *jwksFetch {
	if c.inflight != nil {
		return c.inflight
	}
	if !c.attempted.IsZero() && now.Sub(c.attempted) < jwksMinRefresh {
		return nil
	}
	c.attempted = now
	f := &jwksFetch{done: make(chan struct{})}
	c.inflight = f
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		keys, err := c.fetch(c.ctx)
		c.mu.Lock()
		if err == nil {
			c.keys, c.fetched = keys, c.now()
		}
		f.err = err
		c.inflight = nil
		c.mu.Unlock()
		close(f.done)
	}()
	return f
}

func (c *jwksCache) rememberUnknownLocked(kid string, now time.Time) {
	if len(c.unknown) >= jwksMaxUnknown {
		for k, until := range c.unknown {
			if !now.Before(until) {
				delete(c.unknown, k)
			}
		}
		if len(c.unknown) >= jwksMaxUnknown {
			clear(c.unknown)
		}
	}
	c.unknown[kid] = now.Add(jwksUnknownTTL)
}

func (c *jwksCache) find(kid, alg string) (any, error) {
	var match []jwk
	for _, k := range c.keys {
		if kid != "" && k.kid != kid {
			continue
		}
		if k.alg != "" && k.alg != alg {
			continue
		}
		if !keyFitsAlg(k.pub, alg) {
			continue
		}
		match = append(match, k)
	}
	switch {
	case len(match) == 1:
		return match[0].pub, nil
	case len(match) > 1 && kid != "":
		return match[0].pub, nil
	case len(match) > 1:
		return nil, fmt.Errorf("token has no kid and the jwks holds %d %s keys", len(match), alg)
	case kid != "":
		return nil, fmt.Errorf("no %s key with kid %q in the jwks", alg, kid)
	default:
		return nil, fmt.Errorf("no %s key in the jwks", alg)
	}
}

func keyFitsAlg(pub any, alg string) bool {
	switch pub.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		return strings.HasPrefix(alg, "ES")
	}
	return false
}

// fetch reads the key set. It touches no field guarded by mu: the caller
// installs the keys (on failure the previous keys stay in use).
func (c *jwksCache) fetch(ctx context.Context) ([]jwk, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %s", c.url, resp.Status)
	}
	var doc struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			Alg string `json:"alg"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, jwksMaxBytes)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("GET %s: decoding jwks: %w", c.url, err)
	}
	var keys []jwk
	var skipped []error
	for i, k := range doc.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		var pub any
		var err error
		switch k.Kty {
		case "RSA":
			pub, err = rsaKey(k.N, k.E)
		case "EC":
			pub, err = ecKey(k.Crv, k.X, k.Y)
		default:
			continue // e.g. "oct" or "OKP": not accepted for tokens here
		}
		if err != nil {
			skipped = append(skipped, fmt.Errorf("keys[%d] (kid %q): %w", i, k.Kid, err))
			continue
		}
		keys = append(keys, jwk{kid: k.Kid, alg: k.Alg, pub: pub})
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("GET %s: no usable signing key in jwks: %w", c.url, errors.Join(skipped...))
	}
	return keys, nil
}

func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func rsaKey(n, e string) (*rsa.PublicKey, error) {
	nb, err := b64(n)
	if err != nil || len(nb) == 0 {
		return nil, fmt.Errorf("bad RSA modulus n")
	}
	eb, err := b64(e)
	if err != nil || len(eb) == 0 || len(eb) > 4 {
		return nil, fmt.Errorf("bad RSA exponent e")
	}
	ev := 0
	for _, b := range eb {
		ev = ev<<8 | int(b)
	}
	k := &rsa.PublicKey{N: new(big.Int).SetBytes(nb), E: ev}
	if k.N.BitLen() < 2048 {
		return nil, fmt.Errorf("RSA key of %d bits is too short (want >= 2048)", k.N.BitLen())
	}
	return k, nil
}

func ecKey(crv, x, y string) (*ecdsa.PublicKey, error) {
	var curve elliptic.Curve
	switch crv {
	case "P-256":
		curve = elliptic.P256()
	case "P-384":
		curve = elliptic.P384()
	case "P-521":
		curve = elliptic.P521()
	default:
		return nil, fmt.Errorf("unsupported EC curve %q", crv)
	}
	xb, err1 := b64(x)
	yb, err2 := b64(y)
	if err1 != nil || err2 != nil {
		return nil, errors.New("bad EC coordinates")
	}
	size := (curve.Params().BitSize + 7) / 8
	if len(xb) != size || len(yb) != size {
		return nil, fmt.Errorf("EC coordinates have the wrong length for %s", crv)
	}
	// Validate the point through crypto/ecdh-style uncompressed encoding.
	enc := append([]byte{4}, append(xb, yb...)...)
	pub, err := ecdsa.ParseUncompressedPublicKey(curve, enc)
	if err != nil {
		return nil, fmt.Errorf("EC point: %w", err)
	}
	return pub, nil
}
