package policy

import (
	"path"
	"slices"
	"strings"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// matches reports whether p is one of m's principals, or has one of its roles
// or scopes. An anonymous caller matches no name.
func matches(m *config.PrincipalMatch, p *gateway.Principal) bool {
	if p == nil {
		return false
	}
	if p.Name != "" && slices.Contains(m.Principals, p.Name) {
		return true
	}
	for _, r := range p.Roles {
		if slices.Contains(m.Roles, r) {
			return true
		}
	}
	for _, s := range p.Scopes {
		if slices.Contains(m.Scopes, s) {
			return true
		}
	}
	return false
}

// glob matches name against pattern with path.Match's syntax (* ? [class]
// and \ escapes, as the config checks them), except that * also crosses '/':
// a resource URI's slashes are ordinary characters, so "file:///srv/*" covers
// every file under /srv. An invalid pattern matches nothing (New refuses it).
func glob(pattern, name string) bool {
	ok, err := path.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(name, "/", "\x00"))
	return err == nil && ok
}

// checkGlob says what is wrong with a pattern.
func checkGlob(pattern string) error {
	_, err := path.Match(pattern, "")
	return err
}
