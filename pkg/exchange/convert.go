package exchange

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Stringify renders a value the way Helix shows it in text: strings and []byte as is,
// nil as "", numbers and bools in Go syntax, everything else as compact JSON.
func Stringify(v any) string {
	if s, ok := ScalarText(v); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ScalarText is Stringify for the values it does not render as JSON (nil, strings,
// bytes, raw JSON, bools, numbers, Stringers, errors); ok is false for the others,
// which a caller may encode as JSON its own way.
func ScalarText(v any) (s string, ok bool) {
	switch t := v.(type) {
	case nil:
		return "", true
	case string:
		return t, true
	case []byte:
		return string(t), true
	case json.RawMessage:
		return string(t), true
	case bool:
		return strconv.FormatBool(t), true
	case int:
		return strconv.Itoa(t), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	case fmt.Stringer:
		return t.String(), true
	case error:
		return t.Error(), true
	}
	return "", false
}
