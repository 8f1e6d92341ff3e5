package creds

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/redact"
)

// minScrubbed is the shortest secret Scrub replaces: shorter values would shred
// ordinary words and hide nothing worth hiding.
const minScrubbed = 4

// Scrub returns err as the client may see it: without the secrets given (the
// headers sent to the upstream, see HeaderSecrets, and the caller's token),
// without any credential written after "Bearer" or "Basic" or shaped like a
// JWT (an upstream may echo a token the gateway does not know, such as one its
// own OAuth client obtained), and with what redact.Text hides at every boundary
// (URL passwords and query values, the process's secret set).
//
// The result keeps what the relay needs of err: a *gateway.Refusal stays one,
// a JSON-RPC error keeps its code (its data is kept only when it is still JSON
// once scrubbed), and errors.Is still finds context.Canceled and the like. It
// does not unwrap to err: errors.As must not reach the unscrubbed text.
func Scrub(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	var r *gateway.Refusal
	if errors.As(err, &r) {
		c := *r
		c.Message = scrubText(r.Message, secrets)
		return &c
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		c := &jsonrpc.Error{Code: we.Code, Message: scrubText(we.Message, secrets)}
		if len(we.Data) > 0 {
			if data := scrubText(string(we.Data), secrets); json.Valid([]byte(data)) {
				c.Data = json.RawMessage(data)
			}
		}
		return c
	}
	return &scrubbed{msg: scrubText(err.Error(), secrets), cause: err}
}

// ScrubText is Scrub for text the relay hands on: an upstream's tool error
// result, a log message from an upstream.
func ScrubText(s string, secrets ...string) string { return scrubText(s, secrets) }

// HeaderSecrets lists the secrets in headers sent to an upstream (what
// Credentials.Header returned, the upstream's configured headers): every value,
// the credential after an auth scheme ("Bearer x" → x) and the parts of a Basic
// credential once decoded (an upstream may echo the password it checked).
func HeaderSecrets(h http.Header) []string {
	var out []string
	for _, vs := range h {
		for _, v := range vs {
			out = append(out, v)
			scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
			if !ok {
				continue
			}
			cred = strings.TrimSpace(cred)
			out = append(out, cred)
			if strings.EqualFold(scheme, "basic") {
				if raw, err := base64.StdEncoding.DecodeString(cred); err == nil {
					user, pass, _ := strings.Cut(string(raw), ":")
					out = append(out, string(raw), user, pass)
				}
			}
		}
	}
	return out
}

// credentialAfterScheme matches "Bearer <token>" and "Basic <credential>".
var credentialAfterScheme = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)([A-Za-z0-9\-._~+/]+=*)`)

// jwtShaped matches a JWS compact serialization (header.payload.signature whose
// header is base64url JSON): a token whatever it is called.
var jwtShaped = regexp.MustCompile(`eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`)

func scrubText(s string, secrets []string) string {
	// Longest first, so that a secret containing another is replaced whole.
	sorted := make([]string, 0, len(secrets))
	for _, v := range secrets {
		if v = strings.TrimSpace(v); len(v) >= minScrubbed {
			sorted = append(sorted, v)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	if len(sorted) > 0 {
		pairs := make([]string, 0, 2*len(sorted))
		for _, v := range sorted {
			pairs = append(pairs, v, redact.Replacement)
		}
		s = strings.NewReplacer(pairs...).Replace(s)
	}
	s = jwtShaped.ReplaceAllString(s, redact.Replacement)
	s = credentialAfterScheme.ReplaceAllStringFunc(s, func(m string) string {
		sub := credentialAfterScheme.FindStringSubmatch(m)
		if strings.EqualFold(sub[1], "basic") && !isBasicCredential(sub[3]) {
			return m // "basic authentication" is prose
		}
		return sub[1] + sub[2] + redact.Replacement
	})
	return redact.Text(s)
}

// scrubbed is an error whose text was scrubbed. errors.Is asks the original
// (context.Canceled, os.ErrDeadlineExceeded …), errors.As does not reach it.
type scrubbed struct {
	msg   string
	cause error
}

func (e *scrubbed) Error() string { return e.msg }

func (e *scrubbed) Is(target error) bool { return errors.Is(e.cause, target) }

// isBasicCredential reports whether s is base64 of "user:password".
func isBasicCredential(s string) bool {
	raw, err := base64.StdEncoding.DecodeString(s)
	return err == nil && strings.Contains(string(raw), ":")
}

// redactURL masks a URL's password and query values for a message.
func redactURL(raw string) string { return redact.URL(raw) }

// Secrets lists the secrets of an upstream's configuration, for Scrub: the
// values of its headers: and of the secret keys of its auth: block (token, key,
// client_secret, password, private keys and workload tokens, nested ones too;
// not type, URLs, client ids or file names) and token_exchange.client_secret.
// An upstream's OAuth token endpoint may echo the client secret in an error.
func Secrets(cfg config.UpstreamConfig) []string {
	var out []string
	for _, v := range cfg.Headers {
		out = append(out, v)
	}
	if cfg.Auth != nil {
		out = appendSecretValues(out, cfg.Auth.Values)
	}
	if te := cfg.TokenExchange; te != nil && te.ClientSecret != "" {
		out = append(out, te.ClientSecret)
	}
	return out
}

// appendSecretValues adds the string values under secret keys of m, walking
// nested mappings.
func appendSecretValues(out []string, m map[string]any) []string {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			out = appendSecretValues(out, v)
		case string:
			if isSecretKey(k) {
				out = append(out, v)
			}
		}
	}
	return out
}

// isSecretKey says whether an auth: key holds a credential: its name speaks of
// a token, key, secret or password and it is no file name, URL, type or header name.
func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, notSecret := range []string{"_file", "_url", "_type", "_alg"} {
		if strings.HasSuffix(k, notSecret) {
			return false
		}
	}
	for _, secret := range []string{"token", "key", "secret", "password"} {
		if strings.Contains(k, secret) {
			return true
		}
	}
	return false
}
