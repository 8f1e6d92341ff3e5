package step

import (
	"fmt"
	"sort"

	"github.com/arvenza/helix/pkg/component"
)

// knownScheme reports whether scheme belongs to a component Helix knows but this
// context does not have, with a hint on what to do.
func knownScheme(scheme string) (hint string, known bool) {
	if sp := component.SpecOf(scheme); sp != nil {
		return fmt.Sprintf("%s:// (%s: %s) is not registered in this context", scheme, sp.Syntax, sp.Summary), true
	}
	return "", false
}

// allSchemes lists the schemes a URI may use here, for did-you-mean hints.
func allSchemes(bc *BuildContext) []string {
	set := map[string]bool{}
	for _, s := range bc.HC.Schemes() {
		set[s] = true
	}
	for _, s := range URISchemes() {
		set[s] = true
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// directionProblem explains why scheme cannot be used in this role, "" when it can.
// Schemes missing from the static table (components a test or an embedding program
// registered) are trusted; their endpoints report misuse when started.
func directionProblem(scheme string, trigger bool) string {
	sp := component.SpecOf(scheme)
	if sp == nil {
		return ""
	}
	switch {
	case trigger && sp.Direction == component.ProducerOnly:
		return fmt.Sprintf("%s:// is producer-only: it can be used as a target, not as a trigger", scheme)
	case !trigger && sp.Direction == component.ConsumerOnly:
		return fmt.Sprintf("%s:// is consumer-only: it can be used as a trigger, not as a target", scheme)
	}
	return ""
}
