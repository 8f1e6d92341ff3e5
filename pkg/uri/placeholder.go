package uri

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/arvenza/helix/pkg/exchange"
)

// HasPlaceholders reports whether s contains a ${…} placeholder.
func HasPlaceholders(s string) bool { return strings.Contains(s, "${") }

// Expand resolves ${body}, ${body.x.y}, ${payload.x}, ${header.X}, ${headers.X},
// ${variable.x}, ${principal.x} (who the exchange runs for: exchange.HeaderPrincipal),
// ${env:NAME} and ${env:NAME:-default} (see [Env]) in s against ex
// (ex may be nil: only env then).
// A missing field expands to ""; a missing env variable is an error naming it; an
// unterminated placeholder is an error.
func Expand(s string, ex *exchange.Exchange) (string, error) {
	return expand(s, ex, nil)
}

// ExpandURI resolves the placeholders of an endpoint URI template like [Expand], but
// keeps each value an exchange supplies inside the part of the URI it was written in:
//
//   - in the query, values are query-escaped (so "a&allowEscape=true" stays one
//     option value and cannot add an option);
//   - in the host, a value may hold only letters, digits, '-', '.' and '_': anything
//     else (a port, user info, a path) is refused;
//   - in the path, a value is percent-encoded except for RFC 3986's unreserved
//     characters and sub-delimiters, so it cannot add a '/', ':', '@', '#' or '?', and
//     '%' is encoded too ("%2e%2e" stays literal text); a path segment that comes
//     out as "." or ".." is refused.
//
// ${env:…} values come from the operator, not the exchange, and are kept as they are
// (a '?' in one is escaped as %3F so that it cannot start a query). The template's
// own text is kept as written.
func ExpandURI(template string, ex *exchange.Exchange) (string, error) {
	if !HasPlaceholders(template) {
		return template, nil
	}
	q := queryStart(template)
	if q < 0 {
		return expandAddress(template, ex)
	}
	addr, err := expandAddress(template[:q], ex)
	if err != nil {
		return "", err
	}
	query, err := expand(template[q:], ex, url.QueryEscape)
	if err != nil {
		return "", err
	}
	return addr + query, nil
}

func escapeAddress(v string) string { return strings.ReplaceAll(v, "?", "%3F") }

// expandAddress expands the scheme://host/path part of a template (see ExpandURI).
func expandAddress(addr string, ex *exchange.Exchange) (string, error) {
	start := strings.Index(addr, "://")
	if start < 0 {
		return expand(addr, ex, escapeAddress)
	}
	scheme := strings.ToLower(addr[:start])
	start += len("://")
	hostEnd := len(addr)
	if i := indexOutsidePlaceholders(addr[start:], '/'); i >= 0 {
		hostEnd = start + i
	}
	if scheme == "file" {
		// file://dir is a directory, not a host: all of it is path.
		hostEnd = start
	}
	host, err := expandPart(addr[start:hostEnd], ex, hostValue)
	if err != nil {
		return "", fmt.Errorf("%s: %w", addr, err)
	}
	path, err := expandPath(addr[hostEnd:], ex)
	if err != nil {
		return "", fmt.Errorf("%s: %w", addr, err)
	}
	return addr[:start] + host + path, nil
}

// indexOutsidePlaceholders is the index of the first c in s outside ${…}; -1 if none.
func indexOutsidePlaceholders(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == c:
			return i
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '{':
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				return -1
			}
			i += j
		}
	}
	return -1
}

// hostValue accepts a value for the host: a name or an IPv4 address, nothing that
// would add a port, user info or a path.
func hostValue(expr, v string) (string, error) {
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return "", fmt.Errorf("placeholder ${%s} gave %q for the host: a host from a placeholder may hold only letters, digits, '-', '.' and '_' (write a port, user or path in the URI itself)", expr, v)
		}
	}
	return v, nil
}

// expandPart expands the placeholders of s, passing each value an exchange supplied
// through check (${env:…} values through escapeAddress).
func expandPart(s string, ex *exchange.Exchange, check func(expr, v string) (string, error)) (string, error) {
	var out strings.Builder
	err := expandEach(s, ex, func(literal string) { out.WriteString(literal) }, func(expr, v string) error {
		if isEnv(expr) {
			out.WriteString(escapeAddress(v))
			return nil
		}
		v, err := check(expr, v)
		out.WriteString(v)
		return err
	})
	return out.String(), err
}

// expandPath expands the placeholders of a URI path: values are percent-encoded
// (pathValueEscape) and a segment holding one must not come out as "." or "..".
func expandPath(s string, ex *exchange.Exchange) (string, error) {
	var out strings.Builder
	segStart, tainted, lastExpr := 0, false, ""
	checkSegment := func() error {
		seg := out.String()[segStart:]
		if tainted && (seg == "." || seg == "..") {
			return fmt.Errorf("placeholder ${%s} makes the path segment %q, which would move to another path; such values are refused", lastExpr, seg)
		}
		return nil
	}
	var segErr error
	err := expandEach(s, ex, func(literal string) {
		for {
			i := strings.IndexByte(literal, '/')
			if i < 0 {
				out.WriteString(literal)
				return
			}
			out.WriteString(literal[:i])
			if err := checkSegment(); err != nil && segErr == nil {
				segErr = err
			}
			out.WriteByte('/')
			segStart, tainted = out.Len(), false
			literal = literal[i+1:]
		}
	}, func(expr, v string) error {
		if isEnv(expr) {
			out.WriteString(escapeAddress(v))
			return nil
		}
		out.WriteString(pathValueEscape(v))
		tainted, lastExpr = true, expr
		return nil
	})
	if err != nil {
		return "", err
	}
	if segErr != nil {
		return "", segErr
	}
	if err := checkSegment(); err != nil {
		return "", err
	}
	return out.String(), nil
}

// pathValueEscape percent-encodes v for a URI path segment: everything but RFC 3986's
// unreserved characters (letters, digits, "-._~") and the sub-delimiters
// "!$&'()*+,;=" is encoded, '/', ':', '@', '#', '?' and '%' included.
func pathValueEscape(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~!$&'()*+,;=", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func isEnv(expr string) bool { return strings.HasPrefix(strings.TrimSpace(expr), "env:") }

// expandEach walks s, handing literal text to literal and each placeholder's
// expression and value to value.
func expandEach(s string, ex *exchange.Exchange, literal func(string), value func(expr, v string) error) error {
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			literal(s)
			return nil
		}
		literal(s[:i])
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return fmt.Errorf("unterminated placeholder in %q: add the closing }", s)
		}
		expr := s[i+2 : i+j]
		v, err := Lookup(expr, ex)
		if err != nil {
			return err
		}
		if err := value(expr, v); err != nil {
			return err
		}
		s = s[i+j+1:]
	}
}

// queryStart is the index of the '?' that starts the query of a URI template, outside
// ${…} placeholders; -1 when there is none.
func queryStart(s string) int { return indexOutsidePlaceholders(s, '?') }

func expand(s string, ex *exchange.Exchange, esc func(string) string) (string, error) {
	if !HasPlaceholders(s) {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated placeholder in %q: add the closing }", s)
		}
		expr := s[i+2 : i+j]
		v, err := Lookup(expr, ex)
		if err != nil {
			return "", err
		}
		if esc != nil {
			v = esc(v)
		}
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

// Env resolves the text after "env:" of an ${env:…} placeholder: NAME is the
// variable's value (an error naming it when unset); NAME:-default is the value, or
// default when the variable is unset or empty (as in the shell). The default is taken
// as written, up to the closing brace; it may contain ':' (${env:ADDR:-127.0.0.1:8080})
// but not '}'.
func Env(spec string) (string, error) {
	name, def, hasDefault := strings.Cut(spec, ":-")
	name = strings.TrimSpace(name)
	if name == "" {
		return "", fmt.Errorf("${env:%s}: the variable name is missing", spec)
	}
	v, found := os.LookupEnv(name)
	if hasDefault && v == "" {
		return def, nil
	}
	if !found {
		return "", fmt.Errorf("environment variable %s is not set (referenced as ${env:%s}; ${env:%s:-value} gives a default)", name, name, name)
	}
	return v, nil
}

// Lookup resolves one placeholder expression (the text between ${ and }).
func Lookup(expr string, ex *exchange.Exchange) (string, error) {
	expr = strings.TrimSpace(expr)
	if spec, ok := strings.CutPrefix(expr, "env:"); ok {
		return Env(spec)
	}
	v, err := LookupValue(expr, ex)
	if err != nil {
		return "", err
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	return exchange.Stringify(v), nil
}

// LookupValue resolves one placeholder expression like [Lookup] but returns
// the value as the exchange holds it (a number, a list, a map …) rather than
// as text: nil for a missing field, a string for ${env:…}, ${exchangeId} and
// ${exception}.
func LookupValue(expr string, ex *exchange.Exchange) (any, error) {
	expr = strings.TrimSpace(expr)
	if spec, ok := strings.CutPrefix(expr, "env:"); ok {
		return Env(spec)
	}
	if ex == nil {
		return nil, fmt.Errorf("placeholder ${%s} needs an exchange; only ${env:NAME} can be resolved here", expr)
	}
	root, path, _ := strings.Cut(expr, ".")
	switch root {
	case "body", "payload":
		return walk(ex.In().Body(), path), nil
	case "header", "headers", "in.header", "in.headers":
		if path == "" {
			return ex.In().Headers(), nil
		}
		return ex.In().Header(path), nil
	case "variable", "variables", "var":
		name, rest, _ := strings.Cut(path, ".")
		return walk(ex.Variable(name), rest), nil
	case "principal":
		// Who the exchange runs for (exchange.HeaderPrincipal): set by the MCP
		// server from the caller's verified credential, absent for anonymous
		// calls.
		return walk(ex.In().Header(exchange.HeaderPrincipal), path), nil
	case "exchangeId":
		return ex.ID(), nil
	case "exception":
		if e := ex.Exception(); e != nil {
			return e.Error(), nil
		}
		return "", nil
	}
	return nil, fmt.Errorf("unknown placeholder ${%s}: use ${body}, ${body.field}, ${header.Name}, ${variable.name}, ${principal.subject} or ${env:NAME}", expr)
}

// walk follows a dotted path into JSON-like data; a JSON text body is decoded first.
func walk(v any, path string) any {
	if path == "" {
		return v
	}
	switch t := v.(type) {
	case string:
		var d any
		if json.Unmarshal([]byte(t), &d) == nil {
			v = d
		}
	case []byte:
		var d any
		if json.Unmarshal(t, &d) == nil {
			v = d
		}
	}
	for _, part := range strings.Split(path, ".") {
		switch t := v.(type) {
		case map[string]any:
			v = t[part]
		case []any:
			var idx int
			if _, err := fmt.Sscanf(part, "%d", &idx); err != nil || idx < 0 || idx >= len(t) {
				return nil
			}
			v = t[idx]
		default:
			return nil
		}
	}
	return v
}
