package postgres

import "testing"

// Column lists come from a caller's body keys; two different lists must never
// share the cache key of their column types (a name with a NUL byte once made
// ["a\x00b"] and ["a", "b"] the same key).
func TestColumnsKeyIsUnambiguous(t *testing.T) {
	t.Parallel()
	lists := [][]string{
		{"a", "b"}, {"a\x00b"}, {"ab"}, {"a", "", "b"}, {"", "ab"}, {"1:a"}, {"1", "a"}, {"a:b"}, {},
	}
	seen := map[string][]string{}
	for _, cols := range lists {
		k := columnsKey(cols)
		if prev, dup := seen[k]; dup {
			t.Errorf("%q and %q share the key %q", prev, cols, k)
		}
		seen[k] = cols
	}
}
