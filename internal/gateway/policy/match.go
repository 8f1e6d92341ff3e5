package policy

import (
	"slices"

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

// glob matches name against pattern, where * stands for any run of characters
// (a resource URI's slashes too) and ? for one character; anything else is
// itself.
func glob(pattern, name string) bool {
	// Iterative matching with one backtrack point: linear in practice, never
	// exponential however many stars a pattern has.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
