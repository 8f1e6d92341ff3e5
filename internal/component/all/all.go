// Package all puts Helix's components into the build: one file per component, each
// a blank import of the component's package (kafka.go imports
// internal/component/kafka), whose init registers its [component.Module]. A file
// may carry a build tag that leaves its component out (kafka.go has
// `//go:build !helix_nokafka`); its counterpart then records the scheme as absent
// ([component.RegisterAbsent]), so a configuration naming it gets "kafka:// is not
// available in this build (built with -tags helix_nokafka)" instead of a
// did-you-mean.
//
// Everything that lists schemes reads the registry through this package or
// pkg/component: configuration validation (unknown scheme, "mcp:// cannot be a
// trigger"), `helix components`, the pages under docs/components/ and the YAML
// schema.
//
// Adding a component is one folder under internal/component/ (its code, its
// spec.go and the init that registers it) plus one file here with its import.
package all

import (
	"errors"
	"fmt"
	"sort"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
)

// Register adds every registered component that hc does not have yet, built
// without module settings; see [RegisterWith]. A component that fails to build is
// logged on hc's logger and left out.
func Register(hc *engine.Context) {
	if err := RegisterWith(hc, nil); err != nil {
		hc.Logger().Error("registering components", "error", err)
	}
}

// RegisterWith adds every registered component that hc does not have yet under
// each of its schemes (one instance serves a spec's scheme and its aliases, so
// http:// and https:// share a connection pool). settings maps a module's scheme
// to its decoded helix.<scheme> block (config's HelixConfig.Modules); the module's
// New gets it. Components registered before — by the engine or by the caller —
// are kept, and modules without New (the MCP client and server, which the
// application wires itself) are skipped. Call it before hc.Start.
func RegisterWith(hc *engine.Context, settings map[string]any) error {
	have := map[string]bool{}
	for _, s := range hc.Schemes() {
		have[s] = true
	}
	var errs []error
	for _, m := range component.Modules() {
		if m.New == nil || have[m.Spec.Scheme] {
			continue
		}
		c, err := m.New(component.Env{Engine: hc, Logger: hc.Logger, Settings: settings[m.Spec.Scheme]})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s://: %w", m.Spec.Scheme, err))
			continue
		}
		for _, s := range m.Spec.Schemes() {
			hc.AddComponent(s, c)
		}
	}
	return errors.Join(errs...)
}

// Specs returns the spec of every component of this build, sorted by scheme. The
// specs are shared and must not be changed.
func Specs() []*component.Spec {
	mods := component.Modules()
	out := make([]*component.Spec, len(mods))
	for i, m := range mods {
		out[i] = m.Spec
	}
	return out
}

// SchemeInfo describes one URI scheme.
type SchemeInfo struct {
	Scheme      string
	Direction   component.Direction
	Description string
}

// Schemes lists every scheme of this build (aliases included), sorted by name. The
// result is a fresh copy.
func Schemes() []SchemeInfo {
	var out []SchemeInfo
	for _, sp := range Specs() {
		for _, s := range sp.Schemes() {
			out = append(out, SchemeInfo{Scheme: s, Direction: sp.Direction, Description: fmt.Sprintf("%s: %s", sp.Syntax, sp.Summary)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Scheme < out[j].Scheme })
	return out
}

// Lookup returns the description of scheme (lower case, without "://").
func Lookup(scheme string) (SchemeInfo, bool) {
	sp := component.SpecOf(scheme)
	if sp == nil {
		return SchemeInfo{}, false
	}
	return SchemeInfo{Scheme: scheme, Direction: sp.Direction, Description: fmt.Sprintf("%s: %s", sp.Syntax, sp.Summary)}, true
}
