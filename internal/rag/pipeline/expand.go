package pipeline

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// ExpandValues resolves the ${…} placeholders in the strings of v — a filter or
// a metadata map as written in YAML: maps, lists, strings, numbers, booleans —
// against ex, returning a new tree (v is not changed).
//
// A string that is exactly one placeholder ("${principal.claims.tenant}") takes
// the value as the exchange holds it, so a number stays a number and a list a
// list ({team: {$in: "${principal.claims.teams}"}}); placeholders inside a
// longer string are replaced by their text.
//
// A placeholder that resolves to nothing (a missing field, header or claim,
// null, "") is an error naming where it is (path, such as "filter.tenant"):
// the value would otherwise become "" and a tenant filter would select the
// chunks without a tenant, or a document be stored without one. Failing closed
// is the only safe reading.
func ExpandValues(v any, ex *exchange.Exchange, path string) (any, error) {
	switch t := v.(type) {
	case string:
		return expandString(t, ex, path)
	case map[string]any:
		out := make(map[string]any, len(t))
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the first error is the same on every run
		for _, k := range keys {
			x, err := ExpandValues(t[k], ex, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			x, err := ExpandValues(e, ex, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	return v, nil
}

// HasPlaceholders reports whether a string of v holds a ${…} placeholder.
func HasPlaceholders(v any) bool {
	switch t := v.(type) {
	case string:
		return uri.HasPlaceholders(t)
	case map[string]any:
		for _, x := range t {
			if HasPlaceholders(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if HasPlaceholders(x) {
				return true
			}
		}
	}
	return false
}

func expandString(s string, ex *exchange.Exchange, path string) (any, error) {
	if !uri.HasPlaceholders(s) {
		return s, nil
	}
	if expr, ok := wholePlaceholder(s); ok {
		v, err := uri.LookupValue(expr, ex)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if isEmpty(v) {
			return nil, emptyPlaceholder(path, expr)
		}
		return v, nil
	}
	var b strings.Builder
	for rest := s; ; {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("%s: unterminated placeholder %q: add the closing }", path, rest[i:])
		}
		expr := rest[i+2 : i+j]
		text, err := uri.Lookup(expr, ex)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if text == "" {
			return nil, emptyPlaceholder(path, expr)
		}
		b.WriteString(rest[:i])
		b.WriteString(text)
		rest = rest[i+j+1:]
	}
	return b.String(), nil
}

// wholePlaceholder reports whether s is one placeholder and nothing else.
func wholePlaceholder(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "${") || !strings.HasSuffix(t, "}") || strings.Count(t, "${") != 1 || strings.IndexByte(t, '}') != len(t)-1 {
		return "", false
	}
	return t[2 : len(t)-1], true
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case []any:
		return len(t) == 0
	}
	return false
}

func emptyPlaceholder(path, expr string) error {
	hint := "make sure the exchange has it (a header, a body field, a variable) before this step"
	if strings.HasPrefix(strings.TrimSpace(expr), "principal") {
		hint = "the caller must authenticate (an API key with a name, or an OAuth token with that claim)"
	}
	return fmt.Errorf("%s: ${%s} is empty for this exchange, so the value cannot be set: %s", path, expr, hint)
}

// MaxMetadataDepth is how deeply metadata objects and lists may nest.
const MaxMetadataDepth = 8

// MetadataValue checks and normalises one metadata value: strings, numbers,
// booleans, lists of them and objects of those (at most MaxMetadataDepth
// deep). Integers become float64 (as JSON decodes them, so that a stored value
// compares like a decoded one); a []string becomes a list. path names the
// value in the error.
func MetadataValue(v any, path string) (any, error) {
	return metadataValue(v, path, 0)
}

func metadataValue(v any, path string, depth int) (any, error) {
	if depth > MaxMetadataDepth {
		return nil, fmt.Errorf("%s: metadata nests more than %d levels deep", path, MaxMetadataDepth)
	}
	switch t := v.(type) {
	case string, bool, float64:
		if f, ok := t.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return nil, fmt.Errorf("%s: %v is not a number metadata can hold (NaN or infinite)", path, f)
		}
		return t, nil
	case int:
		return float64(t), nil
	case int64:
		return float64(t), nil
	case uint64:
		return float64(t), nil
	case float32:
		return metadataValue(float64(t), path, depth)
	case []string:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			x, err := metadataValue(e, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			x, err := metadataValue(e, path+"."+k, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case nil:
		return nil, fmt.Errorf("%s: metadata cannot be null: leave the key out", path)
	}
	return nil, fmt.Errorf("%s: a %T cannot be metadata: use a string, a number, a boolean, or a list or object of those", path, v)
}

// ResolveFilter is a filter written in YAML (a pipeline's or a rag-retrieve
// step's filter:) for one exchange: its placeholders resolved (see
// ExpandValues: an empty one is an error, never a wider filter), checked.
// ex may be nil (a query from the CLI or the console): a filter with
// placeholders then fails, closed.
func ResolveFilter(written map[string]any, ex *exchange.Exchange) (rag.Filter, error) {
	if len(written) == 0 {
		return nil, nil
	}
	if !HasPlaceholders(written) {
		return rag.Filter(written), nil
	}
	if ex == nil {
		ex = exchange.New(exchange.InOnly)
	}
	v, err := ExpandValues(written, ex, "filter")
	if err != nil {
		return nil, err
	}
	f := rag.Filter(v.(map[string]any))
	if _, err := f.Parse(); err != nil {
		return nil, err
	}
	return f, nil
}
