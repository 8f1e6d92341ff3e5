package config

import (
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"
)

// WithParameters appends the `parameters:` of a target or a trigger to raw's query:
// endpoint options written as a mapping instead of in the URI (a polling SQL
// statement need not be one long line). Keys and values are URL-encoded, ${…}
// placeholders inside values are kept; entries whose value is not a scalar are left
// out (the decoder reports them).
func WithParameters(raw string, params []Pair) string {
	return appendParameters(raw, params, func(n *yaml.Node) string { return n.Value })
}

func appendParameters(raw string, params []Pair, value func(*yaml.Node) string) string {
	var b strings.Builder
	b.WriteString(raw)
	sep := "?"
	if strings.Contains(raw, "?") {
		sep = "&"
	}
	for _, p := range params {
		if p.Value == nil || p.Value.Kind != yaml.ScalarNode {
			continue
		}
		b.WriteString(sep)
		sep = "&"
		b.WriteString(url.QueryEscape(p.Key))
		b.WriteByte('=')
		b.WriteString(escapeKeepingPlaceholders(value(p.Value)))
	}
	return b.String()
}

func escapeKeepingPlaceholders(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(url.QueryEscape(s))
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(url.QueryEscape(s))
			return b.String()
		}
		b.WriteString(url.QueryEscape(s[:i]))
		b.WriteString(s[i : i+j+1])
		s = s[i+j+1:]
	}
}

// decodeParameters reads a `parameters:` mapping of scalars (option: value).
func decodeParameters(d *Decoder, n *yaml.Node, path string) []Pair {
	pairs, _ := d.Pairs(n, path, "parameters")
	for _, p := range pairs {
		d.String(p.Value, KeyPath(path, p.Key))
	}
	return pairs
}
