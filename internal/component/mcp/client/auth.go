package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/arvenza/helix/internal/component/mcp/client/oauth"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/uri"
)

// Auth types of an MCP client's auth: block (spec §4.7).
const (
	AuthBearer = "bearer"
	AuthAPIKey = "api-key"
	AuthOAuth2 = "oauth2"
	AuthMTLS   = "mtls"
)

// DefaultAPIKeyHeader is the header an api-key auth sends the key in when the config
// names none.
const DefaultAPIKeyHeader = "X-API-Key"

// tokenFetchTimeout bounds one request to an OAuth2 token endpoint.
const tokenFetchTimeout = 30 * time.Second

// AuthConfig is the client-side authentication of calls to an MCP server: the auth:
// block of a target step or of an agent's MCP tool. Values have their ${env:NAME}
// placeholders resolved by [ParseAuth]. It applies to the http and sse transports.
type AuthConfig struct {
	// Type is AuthBearer, AuthAPIKey, AuthOAuth2 or AuthMTLS.
	Type string

	// Token is the bearer token (Authorization: Bearer <token>).
	Token string

	// Header and Key are the api-key header (default X-API-Key) and its value.
	Header string
	Key    string

	// TokenURL, ClientID, ClientSecret and Scopes configure the OAuth2 client
	// credentials grant. Tokens are fetched on first use, cached, and fetched again
	// when they expire.
	TokenURL     string
	ClientID     string
	ClientSecret string
	Scopes       []string

	// Discover, for oauth2, finds the token endpoint by discovery on the server's
	// first 401 (protected resource metadata, then the authorization server's
	// metadata) instead of TokenURL; the grant is still client credentials.
	Discover bool

	// PrivateKey (PEM) or PrivateKeyFile, for oauth2 with discover, authenticate
	// the client with a JWT it signs (private_key_jwt) instead of ClientSecret;
	// SigningAlg is the JWS algorithm ("" picks the key's usual one).
	PrivateKey     string
	PrivateKeyFile string
	SigningAlg     string
	// Enterprise, for oauth2 with discover, is enterprise-managed authorization:
	// an ID token exchanged at the enterprise IdP for an ID-JAG, traded for the
	// token at the server's authorization server.
	Enterprise *oauth.Enterprise
	// WorkloadToken or WorkloadTokenFile, for oauth2 with discover, is workload
	// identity federation: the workload's identity JWT is the assertion of the
	// JWT bearer grant (the file is read again for every token).
	WorkloadToken     string
	WorkloadTokenFile string

	// Login, for oauth2, uses the login `helix mcp login URL` stored for the
	// server (refreshed and stored again as needed) instead of a client of its own.
	Login bool
	// LoginDir is where logins are read from; "" means oauth.DefaultDir("").
	LoginDir string

	key *oauth.PrivateKey // PrivateKey or PrivateKeyFile, parsed by ParseAuth

	// CertFile and KeyFile are the client certificate and key (PEM) for mTLS; CAFile,
	// when set, replaces the system roots for verifying the server.
	CertFile string
	KeyFile  string
	CAFile   string
}

// authKeys lists the keys each auth type accepts; anything else is a typo worth
// reporting rather than silently ignoring (a misspelled token means no auth at all).
var authKeys = map[string][]string{
	AuthBearer: {"type", "token"},
	AuthAPIKey: {"type", "header", "key"},
	AuthOAuth2: {"type", "token_url", "discover", "login", "client_id", "client_secret", "scopes",
		"private_key", "private_key_file", "signing_alg", "enterprise", "workload_token", "workload_token_file"},
	AuthMTLS: {"type", "cert_file", "key_file", "ca_file"},
}

// ParseAuth builds an AuthConfig from a decoded auth: mapping such as
//
//	{type: bearer, token: "${env:MCP_TOKEN}"}
//
// resolving ${env:NAME} in every value. Errors name the offending key (callers prefix
// the YAML position). scopes may be a list or a space/comma separated string.
func ParseAuth(m map[string]any) (*AuthConfig, error) {
	if len(m) == 0 {
		return nil, errors.New("auth: empty block; set type to bearer, api-key, oauth2 or mtls")
	}
	typ, err := authString(m, "type")
	if err != nil {
		return nil, err
	}
	allowed, ok := authKeys[typ]
	if !ok {
		if typ == "" {
			return nil, errors.New("auth: type is required (bearer, api-key, oauth2 or mtls)")
		}
		return nil, fmt.Errorf("auth: unknown type %q (use bearer, api-key, oauth2 or mtls)", typ)
	}
	var unknown []string
	for k := range m {
		if !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("auth: unknown key(s) %s for type %s (allowed: %s)",
			strings.Join(unknown, ", "), typ, strings.Join(allowed[1:], ", "))
	}
	a := &AuthConfig{Type: typ}
	fields := map[string]*string{
		"token": &a.Token, "header": &a.Header, "key": &a.Key,
		"token_url": &a.TokenURL, "client_id": &a.ClientID, "client_secret": &a.ClientSecret,
		"private_key": &a.PrivateKey, "private_key_file": &a.PrivateKeyFile, "signing_alg": &a.SigningAlg,
		"workload_token": &a.WorkloadToken, "workload_token_file": &a.WorkloadTokenFile,
		"cert_file": &a.CertFile, "key_file": &a.KeyFile, "ca_file": &a.CAFile,
	}
	for _, k := range allowed[1:] {
		if k == "discover" || k == "login" {
			b, err := authBool(m, k)
			if err != nil {
				return nil, err
			}
			if k == "discover" {
				a.Discover = b
			} else {
				a.Login = b
			}
			continue
		}
		if k == "enterprise" {
			if a.Enterprise, err = parseEnterprise(m[k]); err != nil {
				return nil, err
			}
			continue
		}
		if k == "scopes" {
			if a.Scopes, err = authScopes(m[k]); err != nil {
				return nil, err
			}
			continue
		}
		if *fields[k], err = authString(m, k); err != nil {
			return nil, err
		}
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if a.PrivateKey != "" || a.PrivateKeyFile != "" {
		// Read now, so a bad key is reported with the YAML that names it rather
		// than on the server's first 401.
		if a.key, err = a.loadPrivateKey(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// enterpriseKeys are the keys of oauth2's enterprise: block.
var enterpriseKeys = []string{"idp_token_url", "idp_client_id", "idp_client_secret", "id_token"}

// parseEnterprise reads the enterprise: block of an oauth2 auth, resolving
// ${env:NAME} in its values.
func parseEnterprise(v any) (*oauth.Enterprise, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("auth: enterprise must be a mapping {%s}, got %T", strings.Join(enterpriseKeys, ", "), v)
	}
	var unknown []string
	for k := range m {
		if !contains(enterpriseKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("auth: unknown key(s) %s in enterprise (allowed: %s)", strings.Join(unknown, ", "), strings.Join(enterpriseKeys, ", "))
	}
	e := &oauth.Enterprise{}
	for k, dst := range map[string]*string{"idp_token_url": &e.IdPTokenURL, "idp_client_id": &e.IdPClientID,
		"idp_client_secret": &e.IdPClientSecret, "id_token": &e.IDToken} {
		s, err := authString(m, k)
		if err != nil {
			return nil, fmt.Errorf("auth: enterprise.%s", strings.TrimPrefix(err.Error(), "auth: "))
		}
		*dst = s
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return e, nil
}

// loadPrivateKey parses private_key or the file private_key_file names. Its
// errors name the key's source, never its content.
func (a *AuthConfig) loadPrivateKey() (*oauth.PrivateKey, error) {
	pem, where := []byte(a.PrivateKey), "private_key"
	if a.PrivateKeyFile != "" {
		var err error
		if pem, err = os.ReadFile(a.PrivateKeyFile); err != nil {
			return nil, fmt.Errorf("auth: private_key_file: %w", err)
		}
		where = "private_key_file " + a.PrivateKeyFile
	}
	k, err := oauth.ParsePrivateKey(pem, a.SigningAlg)
	if err != nil {
		return nil, fmt.Errorf("auth: %s: %w", where, err)
	}
	return k, nil
}

// Validate reports missing required values.
func (a *AuthConfig) Validate() error {
	need := func(v, key string) error {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("auth: type %s needs %s", a.Type, key)
		}
		return nil
	}
	switch a.Type {
	case AuthBearer:
		return need(a.Token, "token")
	case AuthAPIKey:
		return need(a.Key, "key")
	case AuthOAuth2:
		return a.validateOAuth2(need)
	case AuthMTLS:
		return errors.Join(need(a.CertFile, "cert_file"), need(a.KeyFile, "key_file"))
	}
	return fmt.Errorf("auth: unknown type %q (use bearer, api-key, oauth2 or mtls)", a.Type)
}

// validateOAuth2 checks the three forms of an oauth2 block: login: true alone,
// discover: true with a client, or token_url with a client.
func (a *AuthConfig) validateOAuth2(need func(v, key string) error) error {
	if a.Login {
		var extra []string
		for k, v := range map[string]bool{"token_url": a.TokenURL != "", "discover": a.Discover,
			"client_id": a.ClientID != "", "client_secret": a.ClientSecret != "", "scopes": len(a.Scopes) > 0,
			"private_key": a.PrivateKey != "", "private_key_file": a.PrivateKeyFile != "", "signing_alg": a.SigningAlg != "",
			"enterprise": a.Enterprise != nil, "workload_token": a.WorkloadToken != "", "workload_token_file": a.WorkloadTokenFile != ""} {
			if v {
				extra = append(extra, k)
			}
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			return fmt.Errorf("auth: login: true uses the client and scopes of `helix mcp login`; drop %s (or drop login for a client of its own)", strings.Join(extra, ", "))
		}
		return nil
	}
	if a.Discover && a.TokenURL != "" {
		return errors.New("auth: discover and token_url exclude each other: drop token_url to find the token endpoint by discovery, or drop discover to use token_url")
	}
	hasKey := a.PrivateKey != "" || a.PrivateKeyFile != ""
	workload := a.WorkloadToken != "" || a.WorkloadTokenFile != ""
	if !a.Discover && (hasKey || a.SigningAlg != "" || a.Enterprise != nil || workload) {
		return errors.New("auth: private_key, private_key_file, signing_alg, enterprise and workload_token need discover: true (the authorization server is found from the MCP server)")
	}
	if a.WorkloadToken != "" && a.WorkloadTokenFile != "" {
		return errors.New("auth: workload_token and workload_token_file exclude each other: keep one")
	}
	if workload && a.Enterprise != nil {
		return errors.New("auth: workload_token and enterprise exclude each other: each is the grant (keep workload_token for a workload's identity token, enterprise for a person's ID token)")
	}
	if a.PrivateKey != "" && a.PrivateKeyFile != "" {
		return errors.New("auth: private_key and private_key_file exclude each other: keep one")
	}
	if a.SigningAlg != "" && !hasKey {
		return errors.New("auth: signing_alg needs private_key or private_key_file")
	}
	if hasKey && a.ClientSecret != "" {
		return errors.New("auth: client_secret and a private key exclude each other: the client authenticates with one (drop client_secret for private_key_jwt)")
	}
	if workload {
		// The workload's token is the credential; client_id and a client
		// secret or key are for servers that also want the client named.
		return nil
	}
	if a.Discover && (hasKey || a.Enterprise != nil) {
		// Enterprise clients may be public at the authorization server: the ID-JAG
		// is the credential.
		return need(a.ClientID, "client_id")
	}
	if a.Discover {
		return errors.Join(need(a.ClientID, "client_id"), need(a.ClientSecret, "client_secret"))
	}
	if a.TokenURL == "" {
		return errors.New("auth: type oauth2 needs token_url, discover: true (the token endpoint found from the server), or login: true (the login of helix mcp login)")
	}
	return errors.Join(need(a.ClientID, "client_id"), need(a.ClientSecret, "client_secret"))
}

// authBool reads a boolean key (absent: false).
func authBool(m map[string]any, key string) (bool, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return false, nil
	}
	if b, ok := v.(bool); ok {
		return b, nil
	}
	return false, fmt.Errorf("auth: %s must be true or false, got %v", key, v)
}

// OAuthHandler returns the handler that authorizes requests for the discover and
// login forms of oauth2 (nil for every other auth: those set headers, see
// newHTTPClient). endpoint is the server's URL; base is the connection's transport,
// shared by the authorization requests.
func (a *AuthConfig) OAuthHandler(endpoint string, base http.RoundTripper) (sdkauth.OAuthHandler, error) {
	if a == nil || a.Type != AuthOAuth2 {
		return nil, nil
	}
	client := oauth.NewHTTPClient(base)
	switch {
	case a.Discover:
		cc := &oauth.ClientCredentials{ClientID: a.ClientID, ClientSecret: a.ClientSecret, Scopes: a.Scopes,
			Enterprise: a.Enterprise, PrivateKey: a.key, HTTPClient: client}
		if a.WorkloadToken != "" || a.WorkloadTokenFile != "" {
			cc.Workload = &oauth.WorkloadToken{Token: a.WorkloadToken, File: a.WorkloadTokenFile}
		}
		if cc.PrivateKey == nil && (a.PrivateKey != "" || a.PrivateKeyFile != "") {
			var err error
			if cc.PrivateKey, err = a.loadPrivateKey(); err != nil {
				return nil, err
			}
		}
		return cc, nil
	case a.Login:
		dir := a.LoginDir
		if dir == "" {
			dir = oauth.DefaultDir(config.DefaultDataDir)
		}
		return oauth.NewHandler(endpoint, oauth.LoginConfig{Store: oauth.Store{Dir: dir}, HTTPClient: client}, endpoint+"/mcp")
	}
	return nil, nil
}

func authString(m map[string]any, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		// Numbers and booleans are plain scalars in YAML; a token that happens to be
		// numeric is still a token.
		switch v.(type) {
		case int, int64, float64, bool:
			s = fmt.Sprint(v)
		default:
			return "", fmt.Errorf("auth: %s must be a string, got %T", key, v)
		}
	}
	out, err := uri.Expand(s, nil)
	if err != nil {
		return "", fmt.Errorf("auth: %s: %w", key, err)
	}
	return out, nil
}

func authScopes(v any) ([]string, error) {
	var raw []string
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		raw = strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' })
	case []string:
		raw = t
	case []any:
		for i, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("auth: scopes[%d] must be a string, got %T", i, x)
			}
			raw = append(raw, s)
		}
	default:
		return nil, fmt.Errorf("auth: scopes must be a list of strings, got %T", v)
	}
	out := make([]string, 0, len(raw))
	for _, s := range raw {
		e, err := uri.Expand(s, nil)
		if err != nil {
			return nil, fmt.Errorf("auth: scopes: %w", err)
		}
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// idleConnsPerHost is how many idle connections a connection's transport keeps to
// its server. One session serves many concurrent calls (every agent using the
// server's tools shares it), each a POST of its own: with Go's default of 2, all
// but two of them would dial a new connection for every call.
const idleConnsPerHost = 100

// newHTTPClient returns the HTTP client the SDK transports use: static headers, then
// the auth, on a fresh transport (never http.DefaultTransport, whose TLS settings an
// mTLS config must not touch), and that transport, whose idle connections the owner
// closes when done. No client-wide timeout: an SSE stream lives as long as the
// session; each call is bounded by its context instead.
func newHTTPClient(header http.Header, auth *AuthConfig) (*http.Client, *http.Transport, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = idleConnsPerHost
	base.MaxIdleConns = max(base.MaxIdleConns, idleConnsPerHost)
	var rt http.RoundTripper = base
	if auth != nil {
		// A server that echoes a credential in an error must not show it to our
		// callers, logs or spans, also when it was written literally in the YAML.
		redact.AddSecret(auth.Token, auth.Key, auth.ClientSecret, auth.PrivateKey, auth.WorkloadToken)
		if e := auth.Enterprise; e != nil {
			redact.AddSecret(e.IdPClientSecret, e.IDToken)
		}
		switch auth.Type {
		case AuthBearer:
			rt = &headerTransport{base: rt, header: http.Header{"Authorization": {"Bearer " + auth.Token}}}
		case AuthAPIKey:
			name := auth.Header
			if name == "" {
				name = DefaultAPIKeyHeader
			}
			rt = &headerTransport{base: rt, header: http.Header{http.CanonicalHeaderKey(name): {auth.Key}}}
		case AuthOAuth2:
			if auth.Discover || auth.Login {
				break // the transport's OAuthHandler authorizes (see OAuthHandler)
			}
			rt = &oauth2.Transport{Source: auth.tokenSource(base), Base: rt}
		case AuthMTLS:
			tc, err := auth.tlsConfig()
			if err != nil {
				return nil, nil, err
			}
			base.TLSClientConfig = tc
		default:
			return nil, nil, auth.Validate()
		}
	}
	if len(header) > 0 {
		rt = &headerTransport{base: rt, header: header.Clone()}
	}
	// Outermost: it sees the request as the SDK sent it and the answer as the server
	// gave it (see callTracker).
	return &http.Client{Transport: &trackingTransport{base: rt}, CheckRedirect: sameServerRedirects}, base, nil
}

// maxServerRedirects bounds the redirects of one request to an MCP server.
const maxServerRedirects = 10

// sameServerRedirects is the CheckRedirect of a connection's HTTP client. The
// connection's credentials (auth:, header:) are added by its transport to every
// request it sends, a redirected one too, so a redirect to another origin is
// refused, with an error naming both origins.
var sameServerRedirects = oauth.SameOriginRedirects(maxServerRedirects,
	", since the connection's credentials and headers would go there too; use the address it redirects to if that server is meant")

// tokenSource returns a caching token source: a token is fetched on first use and
// reused until shortly before it expires (oauth2's expiry delta), then fetched again.
func (a *AuthConfig) tokenSource(base http.RoundTripper) oauth2.TokenSource {
	cc := &clientcredentials.Config{
		ClientID:     a.ClientID,
		ClientSecret: a.ClientSecret,
		TokenURL:     a.TokenURL,
		Scopes:       a.Scopes,
	}
	// The token source keeps this context for every fetch, so it must not be a
	// call's context (that would break the next refresh once the call ended); each
	// fetch is bounded by the client timeout instead. It shares the connection's
	// transport, so closing the connection closes its idle token connections too.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: base, Timeout: tokenFetchTimeout})
	return cc.TokenSource(ctx)
}

// tlsConfig loads the client certificate and optional CA for mTLS.
func (a *AuthConfig) tlsConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("auth mtls: load cert_file %s and key_file %s: %w", a.CertFile, a.KeyFile, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if a.CAFile != "" {
		pem, err := os.ReadFile(a.CAFile)
		if err != nil {
			return nil, fmt.Errorf("auth mtls: read ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("auth mtls: ca_file %s holds no PEM certificate", a.CAFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// headerTransport sets fixed headers on every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// A RoundTripper must not modify the caller's request.
	r := req.Clone(req.Context())
	for k, vs := range t.header {
		r.Header[k] = append([]string(nil), vs...)
	}
	return t.base.RoundTrip(r)
}
