package security

import (
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
	jwks        *jwksCache
	parser      *jwt.Parser
	now         func() time.Time
}

func newOAuthVerifier(c OAuthConfig, client *http.Client, now func() time.Time) (*oauthVerifier, error) {
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
		jwks:        &jwksCache{url: c.JWKSURL, client: client, now: now},
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

// verify checks signature, iss, aud, exp and nbf and returns the claims.
func (v *oauthVerifier) verify(ctx context.Context, raw string) (*Claims, error) {
	mc := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(raw, mc, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, err := v.jwks.key(ctx, kid, t.Method.Alg())
		if err != nil {
			return nil, err
		}
		return k, nil
	})
	if err != nil {
		return nil, err
	}
	c := &Claims{Raw: map[string]any(mc)}
	c.Issuer, _ = mc.GetIssuer()
	c.Subject, _ = mc.GetSubject()
	c.Audience, _ = mc.GetAudience()
	if exp, _ := mc.GetExpirationTime(); exp != nil {
		c.ExpiresAt = exp.Time
	}
	c.Scopes = scopesOf(mc)
	return c, nil
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
type jwksCache struct {
	url    string
	client *http.Client
	now    func() time.Time

	// mu is held across a fetch so concurrent requests wait for one fetch
	// instead of each starting their own.
	mu      sync.Mutex
	keys    []jwk
	fetched time.Time
}

type jwk struct {
	kid string
	alg string
	pub any // *rsa.PublicKey or *ecdsa.PublicKey
}

func (c *jwksCache) key(ctx context.Context, kid, alg string) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var fetchErr error
	if c.fetched.IsZero() || now.Sub(c.fetched) > jwksMaxAge {
		fetchErr = c.fetch(ctx)
	}
	k, err := c.find(kid, alg)
	if err != nil && fetchErr == nil && now.Sub(c.fetched) >= jwksMinRefresh {
		if fetchErr = c.fetch(ctx); fetchErr == nil {
			k, err = c.find(kid, alg)
		}
	}
	if err != nil && fetchErr != nil {
		return nil, fmt.Errorf("%w (fetching jwks: %v)", err, fetchErr)
	}
	return k, err
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

// fetch replaces the key set; on failure the previous keys stay in use. The
// fetch time is recorded either way so a failing endpoint is not hammered.
func (c *jwksCache) fetch(ctx context.Context) error {
	c.fetched = c.now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %s", c.url, resp.Status)
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
		return fmt.Errorf("GET %s: decoding jwks: %w", c.url, err)
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
		return fmt.Errorf("GET %s: no usable signing key in jwks: %w", c.url, errors.Join(skipped...))
	}
	c.keys = keys
	return nil
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
