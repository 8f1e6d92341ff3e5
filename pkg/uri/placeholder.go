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
// ${variable.x}, ${env:NAME} and ${env:NAME:-default} (see [Env]) in s against ex
// (ex may be nil: only env then).
// A missing field expands to ""; a missing env variable is an error naming it; an
// unterminated placeholder is an error.
func Expand(s string, ex *exchange.Exchange) (string, error) {
	return expand(s, ex, nil)
}

// ExpandURI resolves the placeholders of an endpoint URI template like [Expand], but
// keeps each substituted value inside the part of the URI it was written in: values
// in the query are query-escaped (so "a&allowEscape=true" stays one option value and
// cannot add an option), and a '?' substituted into the address is escaped as %3F
// (so it cannot start a query). The template's own text is kept as written.
func ExpandURI(template string, ex *exchange.Exchange) (string, error) {
	if !HasPlaceholders(template) {
		return template, nil
	}
	q := queryStart(template)
	if q < 0 {
		return expand(template, ex, escapeAddress)
	}
	addr, err := expand(template[:q], ex, escapeAddress)
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

// queryStart is the index of the '?' that starts the query of a URI template, outside
// ${…} placeholders; -1 when there is none.
func queryStart(s string) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '?':
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
	if ex == nil {
		return "", fmt.Errorf("placeholder ${%s} needs an exchange; only ${env:NAME} can be resolved here", expr)
	}
	root, path, _ := strings.Cut(expr, ".")
	switch root {
	case "body", "payload":
		return exchange.Stringify(walk(ex.In().Body(), path)), nil
	case "header", "headers", "in.header", "in.headers":
		if path == "" {
			return exchange.Stringify(ex.In().Headers()), nil
		}
		return ex.In().HeaderString(path), nil
	case "variable", "variables", "var":
		name, rest, _ := strings.Cut(path, ".")
		return exchange.Stringify(walk(ex.Variable(name), rest)), nil
	case "exchangeId":
		return ex.ID(), nil
	case "exception":
		if e := ex.Exception(); e != nil {
			return e.Error(), nil
		}
		return "", nil
	}
	return "", fmt.Errorf("unknown placeholder ${%s}: use ${body}, ${body.field}, ${header.Name}, ${variable.name} or ${env:NAME}", expr)
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
