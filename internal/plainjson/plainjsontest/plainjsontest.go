// Package plainjsontest holds the awkward plain JSON values that the tests of
// internal/plainjson and of its users (the MCP transport's hand-written result)
// check their encoders with.
package plainjsontest

import "strconv"

// ManyKeys is an object with more members than plainjson's stack array of keys,
// whose keys sort bytewise ("B" < "a" < "é"), and one value with HTML characters.
func ManyKeys() map[string]any {
	m := map[string]any{}
	for i := range 40 {
		m[string(rune("aBé"[i%2]))+strconv.Itoa(i)] = float64(i) / 7
	}
	m["é"] = "<&>"
	return m
}

// DeepValue nests arrays and objects n levels deep.
func DeepValue(n int) any {
	var v any = "leaf"
	for i := range n {
		if i%2 == 0 {
			v = []any{v, float64(i)}
		} else {
			v = map[string]any{"k": v}
		}
	}
	return v
}
