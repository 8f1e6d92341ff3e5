package uri

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/arvenza/helix/pkg/exchange"
)

// HasPlaceholders reports whether s contains a ${…} placeholder.
func HasPlaceholders(s string) bool { return strings.Contains(s, "${") }

// Expand resolves ${body}, ${body.x.y}, ${payload.x}, ${header.X}, ${headers.X},
// ${variable.x} and ${env:NAME} in s against ex (ex may be nil: only env then).
// A missing field expands to ""; a missing env variable is an error naming it; an
// unterminated placeholder is an error.
func Expand(s string, ex *exchange.Exchange) (string, error) {
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
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

// Lookup resolves one placeholder expression (the text between ${ and }).
func Lookup(expr string, ex *exchange.Exchange) (string, error) {
	expr = strings.TrimSpace(expr)
	if name, ok := strings.CutPrefix(expr, "env:"); ok {
		v, found := os.LookupEnv(name)
		if !found {
			return "", fmt.Errorf("environment variable %s is not set (referenced as ${env:%s})", name, name)
		}
		return v, nil
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
