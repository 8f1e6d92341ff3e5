package app

import (
	"strings"
	"sync"
	"weak"

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

// targetSchemesOf maps each workflow or tool id of cfg to the schemes its
// steps send to. The overview asks on every render and every sample, and the
// answer depends on the YAML only, so it is kept for the last configuration
// asked about (a reload brings a new one; a weak pointer, so that a stopped
// application's configuration is not held).
func targetSchemesOf(cfg *config.Config) map[string][]string {
	targetSchemes.mu.Lock()
	defer targetSchemes.mu.Unlock()
	if targetSchemes.cfg.Value() == cfg && targetSchemes.by != nil {
		return targetSchemes.by
	}
	by := make(map[string][]string, len(cfg.Workflows)+len(cfg.Tools))
	for _, w := range cfg.Workflows {
		by[w.ID] = stepTargetSchemes(w.Steps)
	}
	for _, t := range cfg.Tools {
		by[t.ID] = stepTargetSchemes(t.Steps)
	}
	targetSchemes.cfg, targetSchemes.by = weak.Make(cfg), by
	return by
}

var targetSchemes struct {
	mu  sync.Mutex
	cfg weak.Pointer[config.Config]
	by  map[string][]string
}
