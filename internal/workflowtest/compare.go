package workflowtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/arvenza/helix/pkg/exchange"
)

// plain turns a body into JSON-like data (map[string]any, []any, string, float64,
// bool, nil) so that a YAML expectation and whatever a step left compare by value:
// 3 and 3.0 are equal, and a JSON text answers like the data it holds when the
// expectation is data.
func plain(body any, wantData bool) any {
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		if wantData {
			if v, ok := decodeJSON([]byte(b)); ok {
				return v
			}
		}
		return b
	case []byte:
		if v, ok := decodeJSON(b); ok && wantData {
			return v
		}
		return string(b)
	case json.RawMessage:
		if v, ok := decodeJSON(b); ok {
			return v
		}
		return string(b)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return exchange.Stringify(body)
	}
	v, _ := decodeJSON(raw)
	return v
}

func decodeJSON(b []byte) (any, bool) {
	var v any
	if len(bytes.TrimSpace(b)) == 0 || json.Unmarshal(b, &v) != nil {
		return nil, false
	}
	return v, true
}

// isData reports whether an expected value is structured (not a plain string).
func isData(v any) bool {
	_, isString := v.(string)
	return !isString
}

// bodyText is the body as a test reads it with contains and matches: text as it
// is, anything else as compact JSON.
func bodyText(body any) string {
	switch b := body.(type) {
	case nil:
		return ""
	case string:
		return b
	case []byte:
		return string(b)
	}
	return show(plain(body, true))
}

// show renders a value for a failure message: compact JSON, strings quoted.
func show(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

// differences lists where got differs from want, one "path: got …, want …" line
// each (at most maxDiffs). With subset, got may have keys and trailing list items
// that want does not mention.
func differences(path string, got, want any, subset bool) []string {
	var out []string
	diff(path, got, want, subset, &out)
	return out
}

const maxDiffs = 10

func diff(path string, got, want any, subset bool, out *[]string) {
	if len(*out) >= maxDiffs {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: got %s, want a mapping %s", path, show(got), show(want)))
			return
		}
		for _, k := range sortedKeys(w) {
			gv, present := g[k]
			if !present {
				*out = append(*out, fmt.Sprintf("%s: missing, want %s", path+"."+k, show(w[k])))
				continue
			}
			diff(path+"."+k, gv, w[k], subset, out)
		}
		if !subset {
			for _, k := range sortedKeys(g) {
				if _, expected := w[k]; !expected {
					*out = append(*out, fmt.Sprintf("%s: got %s, not expected", path+"."+k, show(g[k])))
				}
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: got %s, want a list %s", path, show(got), show(want)))
			return
		}
		if len(g) < len(w) || (!subset && len(g) != len(w)) {
			*out = append(*out, fmt.Sprintf("%s: got %d items, want %d", path, len(g), len(w)))
		}
		for i := 0; i < len(w) && i < len(g); i++ {
			diff(path+"["+strconv.Itoa(i)+"]", g[i], w[i], subset, out)
		}
	default:
		if !scalarEqual(got, want) {
			*out = append(*out, fmt.Sprintf("%s: got %s, want %s", path, show(got), show(want)))
		}
	}
}

func scalarEqual(got, want any) bool {
	switch w := want.(type) {
	case float64:
		g, ok := got.(float64)
		return ok && g == w
	case nil:
		return got == nil
	}
	return got == want
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
