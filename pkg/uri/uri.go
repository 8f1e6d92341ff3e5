// Package uri parses Helix endpoint URIs (scheme://address/path?options) and
// normalises them so that the engine builds one endpoint per distinct URI.
package uri

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// URI is a parsed endpoint URI. Host is the authority part (host:port, or a name such
// as "greet" in direct://greet); Path keeps its leading slash.
type URI struct {
	Raw    string
	Scheme string
	Host   string
	Path   string
	Params url.Values
	// Template is the URI as written when Raw was resolved from it for one exchange
	// (http://api/users/${body.id}); empty for a URI used as written. Components use
	// it, through FromPlaceholder, to treat caller-supplied option values with care.
	Template string
}

// AddressFromPlaceholder reports whether the address (host and path) of the
// Template holds a per-exchange placeholder, i.e. was chosen by the exchange's data.
func (u *URI) AddressFromPlaceholder() bool {
	if u.Template == "" {
		return false
	}
	addr := u.Template
	if q := queryStart(addr); q >= 0 {
		addr = addr[:q]
	}
	return HasPlaceholders(addr)
}

// FromPlaceholder reports whether the value of option name was (partly) supplied by
// a per-exchange placeholder of the Template, i.e. by the data of an exchange rather
// than by the author of the workflow.
func (u *URI) FromPlaceholder(name string) bool {
	if u.Template == "" {
		return false
	}
	q := queryStart(u.Template)
	if q < 0 {
		return false
	}
	// The template's query is parsed by hand: its ${…} text is not valid escaping.
	for _, kv := range strings.Split(u.Template[q+1:], "&") {
		k, v, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if k == name && HasPlaceholders(v) {
			return true
		}
	}
	return false
}

// Parse splits raw into its parts. It accepts the shapes Helix uses:
// direct://name, http-server://host:port/path, mcp:///usr/bin/x/tool?transport=stdio,
// file:///?fileName=x, log://errors.
func Parse(raw string) (*URI, error) {
	raw = strings.TrimSpace(raw)
	i := strings.Index(raw, "://")
	if i <= 0 {
		return nil, fmt.Errorf("invalid endpoint URI %q: want scheme://address (for example direct://orders)", raw)
	}
	u := &URI{Raw: raw, Scheme: strings.ToLower(raw[:i]), Params: url.Values{}}
	for _, r := range u.Scheme {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '+' || r == '.') {
			return nil, fmt.Errorf("invalid endpoint URI %q: bad scheme %q", raw, u.Scheme)
		}
	}
	rest := raw[i+3:]
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		vals, err := url.ParseQuery(rest[q+1:])
		if err != nil {
			return nil, fmt.Errorf("invalid endpoint URI %q: bad query: %v", raw, err)
		}
		u.Params = vals
		rest = rest[:q]
	}
	if s := strings.IndexByte(rest, '/'); s >= 0 {
		u.Host, u.Path = rest[:s], rest[s:]
	} else {
		u.Host = rest
	}
	return u, nil
}

// Normalized returns a canonical form: lower-case scheme, options sorted by name.
func (u *URI) Normalized() string {
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	b.WriteString(u.Host)
	b.WriteString(u.Path)
	if len(u.Params) > 0 {
		keys := make([]string, 0, len(u.Params))
		for k := range u.Params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('?')
		for i, k := range keys {
			for j, v := range u.Params[k] {
				if i > 0 || j > 0 {
					b.WriteByte('&')
				}
				b.WriteString(url.QueryEscape(k))
				b.WriteByte('=')
				b.WriteString(url.QueryEscape(v))
			}
		}
	}
	return b.String()
}

func (u *URI) String() string { return u.Raw }
