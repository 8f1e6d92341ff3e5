package app

import (
	"strings"

	"github.com/arvenza/helix/internal/config"
)

// stepTargetSchemes lists the schemes of the endpoints steps send to
// (target:, to:, wiretap:, in nested step lists too), read from the YAML the
// steps were built from, so that the overview's Connectors name a component a
// workflow only calls (an http target, say) and not just the triggers. Only the
// scheme is kept: a URI's host, query or ${env:…} values never reach a page.
func stepTargetSchemes(steps []config.StepConfig) []string {
	var out []string
	var list func([]lintStep, int)
	list = func(steps []lintStep, depth int) {
		if depth > 50 {
			return
		}
		for _, s := range steps {
			switch s.kind {
			case "target", "to", "wiretap":
				raw, _, _ := targetURI(s.node)
				if sc, ok := uriScheme(raw); ok {
					out = append(out, sc)
				}
			}
			for _, nested := range nestedStepLists(s.node, s.pos.File) {
				list(nested, depth+1)
			}
		}
	}
	list(fromConfig(steps), 0)
	return out
}

// uriScheme is raw's scheme when raw starts with one (RFC 3986: a letter, then
// letters, digits, +, - or .); a URI that is all placeholder (${env:TARGET})
// has none that can be named before it is resolved.
func uriScheme(raw string) (string, bool) {
	s, _, ok := strings.Cut(raw, ":")
	if !ok || s == "" {
		return "", false
	}
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// configSteps maps a workflow or tool id to the steps of its YAML.
func (a *App) configSteps() map[string][]config.StepConfig {
	m := make(map[string][]config.StepConfig, len(a.cfg.Workflows)+len(a.cfg.Tools))
	for _, w := range a.cfg.Workflows {
		m[w.ID] = w.Steps
	}
	for _, t := range a.cfg.Tools {
		m[t.ID] = t.Steps
	}
	return m
}
