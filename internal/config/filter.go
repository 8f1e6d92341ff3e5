package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// FilterHint is the hint of an invalid metadata filter.
const FilterHint = `a filter is an object of metadata values or operators: {lang: en, year: {$gte: 2020}, tags: {$in: [a, b]}}; see docs/rag.md "Filters"`

// FilterCheck validates a metadata filter as the RAG module reads it
// (rag.Filter.Parse), returning where it is wrong ("filter.year.$gte", rooted
// at "filter") and what is; "" and "" for a valid one. The RAG module sets it
// (internal/rag/ragstep), so that this package imports no module; while it is
// nil, DecodeFilter checks placeholders only and the filter is checked when
// it is used.
var FilterCheck func(filter map[string]any) (path, msg string)

// DecodeFilter reads the metadata filter written at n (a rag-retrieve step's
// filter:) and checks it with FilterCheck, with its ${…}
// placeholders standing for values: an unknown operator, a bad shape or an
// unknown placeholder is an error at the position of the member at fault
// (file:line:col). It returns the filter as written (placeholders
// unresolved), nil when it is absent or invalid.
func DecodeFilter(d *Decoder, n *yaml.Node, path string) map[string]any {
	if n == nil || IsNull(n) {
		return nil
	}
	m, ok := d.Value(n, path).(map[string]any)
	if !ok {
		return nil // the shape (a map) reported it
	}
	bad := false
	checkFilterPlaceholders(d, n, path, &bad)
	if bad {
		return nil
	}
	if FilterCheck == nil {
		return m
	}
	if where, msg := FilterCheck(probeFilter(m, "").(map[string]any)); msg != "" {
		rel := strings.TrimPrefix(where, "filter")
		d.Errorf(filterNode(d.Resolve(n), rel), path+rel, "%s", msg).Hint = FilterHint
		return nil
	}
	return m
}

// probeFilter stands a value in for each string that is one ${…} placeholder,
// of the kind its operator takes (a list for $in and $nin, a boolean for
// $exists, a string elsewhere), so that the filter's shape can be checked
// before any exchange exists.
func probeFilter(v any, op string) any {
	switch t := v.(type) {
	case string:
		if !uri.HasPlaceholders(t) {
			return t
		}
		switch op {
		case "$in", "$nin":
			return []any{"placeholder"}
		case "$exists":
			return true
		}
		return "placeholder"
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = probeFilter(x, k)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = probeFilter(x, "")
		}
		return out
	}
	return v
}

// checkFilterPlaceholders checks the ${…} placeholders of every string under n.
func checkFilterPlaceholders(d *Decoder, n *yaml.Node, path string, bad *bool) {
	n = d.Resolve(n)
	switch n.Kind {
	case yaml.ScalarNode:
		for rest := n.Value; ; {
			i := strings.Index(rest, "${")
			if i < 0 {
				return
			}
			j := strings.IndexByte(rest[i:], '}')
			if j < 0 {
				d.Errorf(n, path, "unterminated placeholder %q", rest[i:]).Hint = "add the closing }"
				*bad = true
				return
			}
			expr := strings.TrimSpace(rest[i+2 : i+j])
			if !strings.HasPrefix(expr, "env:") {
				if _, err := uri.Lookup(expr, exchange.New(exchange.InOnly)); err != nil {
					d.Errorf(n, path, "%v", err)
					*bad = true
				}
			}
			rest = rest[i+j+1:]
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkFilterPlaceholders(d, n.Content[i+1], path+"."+n.Content[i].Value, bad)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			checkFilterPlaceholders(d, c, fmt.Sprintf("%s[%d]", path, i), bad)
		}
	}
}

// filterNode finds the node a filter error's path (".year.$gte", ".$or[1].x")
// names under n, as far as it goes: the key of a mapping member, the item of
// a list. Field names may hold dots, so a member is matched by its whole key.
func filterNode(n *yaml.Node, rel string) *yaml.Node {
	for rel != "" {
		switch {
		case n.Kind == yaml.SequenceNode && strings.HasPrefix(rel, "["):
			end := strings.IndexByte(rel, ']')
			var i int
			if end < 0 || func() bool { _, err := fmt.Sscanf(rel[1:end], "%d", &i); return err != nil }() || i < 0 || i >= len(n.Content) {
				return n
			}
			n, rel = n.Content[i], rel[end+1:]
		case n.Kind == yaml.MappingNode && strings.HasPrefix(rel, "."):
			var next *yaml.Node
			var key *yaml.Node
			best := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				tail := rel[1:]
				if strings.HasPrefix(tail, k) && len(k) > best && (len(tail) == len(k) || tail[len(k)] == '.' || tail[len(k)] == '[') {
					best, key, next = len(k), n.Content[i], n.Content[i+1]
				}
			}
			if next == nil {
				return n
			}
			rel = rel[1+best:]
			if rel == "" {
				return key
			}
			n = next
		default:
			return n
		}
	}
	return n
}
