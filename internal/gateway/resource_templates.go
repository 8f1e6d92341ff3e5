package gateway

import (
	"slices"

	"github.com/yosida95/uritemplate/v3"
)

// templateOwner is the upstream whose resource template uri matches, for a
// URI no listing names (demo://resource/dynamic/text/1 of
// demo://resource/dynamic/text/{index}): subscriptions to it go there as its
// reads do. When several templates match, the first in template order wins,
// so that the choice does not change from one call to the next.
func (g *Gateway) templateOwner(uri string) *upstream {
	g.mu.Lock()
	templates := make([]string, 0, len(g.templates))
	for t := range g.templates {
		templates = append(templates, t)
	}
	g.mu.Unlock()
	slices.Sort(templates)
	for _, t := range templates {
		tmpl, err := uritemplate.New(t)
		if err != nil || tmpl.Match(uri) == nil {
			continue
		}
		g.mu.Lock()
		up := g.templates[t]
		g.mu.Unlock()
		if up != nil {
			return up
		}
	}
	return nil
}
