package step

import (
	"fmt"
	"strings"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/uri"
)

// CheckEndpoint validates an endpoint URI used as a workflow trigger (trigger=true)
// or as a target: it must parse, its scheme must have a component in this context,
// the component must support that role, and — when the URI has no ${…} placeholder —
// the endpoint must build (which checks its options). Problems are recorded at pos;
// the result says whether the URI is usable.
//
// Building an endpoint has no side effects (components open listeners and
// connections only when producers and consumers start), so validation may do it.
func (bc *BuildContext) CheckEndpoint(pos config.Pos, path, raw string, trigger bool) bool {
	role := "target"
	if trigger {
		role = "trigger"
	}
	if strings.TrimSpace(raw) == "" {
		bc.Errorf(pos, path, "empty %s URI", role).Hint = "write scheme://address, for example direct://orders"
		return false
	}
	u, err := uri.Parse(raw)
	if err != nil {
		bc.Errorf(pos, path, "%v", err)
		return false
	}
	if strings.Contains(u.Scheme, "${") {
		return true // the scheme is only known per exchange
	}
	if msg := directionProblem(u.Scheme, trigger); msg != "" {
		bc.Errorf(pos, path, "%s", msg)
		return false
	}
	if _, ok := bc.HC.Component(u.Scheme); !ok {
		e := bc.Errorf(pos, path, "unknown scheme %q in %s %s", u.Scheme, role, raw)
		if why, absent := component.Absent(u.Scheme); absent {
			e.Msg = fmt.Sprintf("%s:// is not available in this build (%s)", u.Scheme, why)
			e.Hint = fmt.Sprintf("use a build that includes %s://, or another component for this %s", u.Scheme, role)
		} else if info, known := knownScheme(u.Scheme); known {
			e.Msg = fmt.Sprintf("component %s:// is not available in this build (%s %s)", u.Scheme, role, raw)
			e.Hint = info
		} else {
			e.Hint = config.DidYouMean(u.Scheme, allSchemes(bc))
			if e.Hint == "" {
				e.Hint = "available schemes: " + strings.Join(allSchemes(bc), ", ")
			}
		}
		return false
	}
	if uri.HasPlaceholders(raw) {
		// The endpoint is built per exchange, but its option names (and the values
		// without placeholders) are written here: check them against the spec now.
		if comp, ok := bc.HC.Component(u.Scheme); ok {
			if d, ok := comp.(component.Described); ok {
				if err := d.Spec().CheckTemplate(u); err != nil {
					bc.Errorf(pos, path, "%s: %v", d.Spec().Redact(raw), err)
					return false
				}
			}
		}
		return true
	}
	ep, err := bc.HC.Endpoint(raw)
	if err != nil {
		bc.Errorf(pos, path, "%v", err)
		return false
	}
	if tc, ok := ep.(component.TriggerChecker); ok && trigger {
		if err := tc.CheckTrigger(); err != nil {
			comp, _ := bc.HC.Component(u.Scheme)
			bc.Errorf(pos, path, "%s: %v", component.RedactURI(comp, raw), err)
			return false
		}
	}
	return true
}
