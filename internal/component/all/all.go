// Package all is the list of Helix's components: one registration line each, giving
// the component's [component.Spec] and how to build it for an engine context.
// Everything that lists schemes reads this list: configuration validation (unknown
// scheme, "mcp:// cannot be a trigger", "kafka:// is not available in this build"),
// `helix components`, the pages under docs/components/ and the YAML schema.
//
// Adding a component is one folder under pkg/component/ (its code and its spec.go)
// plus one line in [registrations].
//
// The list is static: validating a configuration needs no component instance and
// has no side effects.
package all

import (
	"fmt"
	"sort"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/internal/component/agent"
	"github.com/arvenza/helix/internal/component/direct"
	"github.com/arvenza/helix/internal/component/file"
	helixhttp "github.com/arvenza/helix/internal/component/http"
	"github.com/arvenza/helix/internal/component/httpserver"
	"github.com/arvenza/helix/internal/component/kafka"
	helixlog "github.com/arvenza/helix/internal/component/log"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/component/pipeline"
	"github.com/arvenza/helix/internal/component/postgres"
	"github.com/arvenza/helix/internal/component/slack"
	"github.com/arvenza/helix/internal/component/timer"
	"github.com/arvenza/helix/internal/component/tool"
	"github.com/arvenza/helix/pkg/engine"
)

// Registration joins one component to Helix: its spec, and New, which builds the
// component for an engine context. A nil New means the component is built and
// registered elsewhere, with wiring this package cannot give it (pkg/app registers
// the MCP components with the configuration's servers and credentials).
type Registration struct {
	Spec *component.Spec
	New  func(hc *engine.Context) component.Component
}

// registrations are Helix's components, one line each.
var registrations = []Registration{
	{agent.Spec, func(hc *engine.Context) component.Component { return agent.New(hc) }}, // pkg/app declares the agents
	{direct.Spec, func(*engine.Context) component.Component { return direct.New() }},
	{file.Spec, func(hc *engine.Context) component.Component { return file.New(hc.Logger) }},
	{helixhttp.Spec, func(*engine.Context) component.Component { return helixhttp.New(nil) }},
	{httpserver.Spec, func(hc *engine.Context) component.Component { return httpserver.New(hc.Logger) }},
	{helixlog.Spec, func(hc *engine.Context) component.Component { return helixlog.New(hc.Logger) }},
	{kafka.Spec, func(hc *engine.Context) component.Component { return kafka.New(kafka.Options{Logger: hc.Logger}) }}, // pkg/app passes helix.kafka.brokers
	{mcpclient.Spec, nil}, // registered by pkg/app, which attaches targets' auth: blocks
	{mcpserver.Spec, nil}, // registered by pkg/app, with helix.mcp.servers and mcps:
	{pipeline.Spec, func(hc *engine.Context) component.Component { return pipeline.New(hc) }}, // pkg/app declares the pipelines
	{postgres.Spec, func(hc *engine.Context) component.Component { return postgres.New(hc.Logger) }},
	{slack.Spec, func(hc *engine.Context) component.Component { return slack.New(&slack.Options{Logger: hc.Logger}) }},
	{timer.Spec, func(hc *engine.Context) component.Component { return timer.New(hc.Logger) }},
	{tool.Spec, func(hc *engine.Context) component.Component { return tool.NewComponent(hc) }},
}

// planned are schemes the Helix documentation uses whose components are not part of
// this build yet: a configuration naming them gets "not available in this build"
// with this reason, rather than a did-you-mean towards an unrelated scheme.
var planned = map[string]string{}

// Register adds every registered component that hc does not have yet under each of
// its schemes (one instance serves a spec's scheme and its aliases, so http:// and
// https:// share a connection pool). Components registered before — by the engine
// or by the caller — are kept. Call it before hc.Start.
func Register(hc *engine.Context) {
	have := map[string]bool{}
	for _, s := range hc.Schemes() {
		have[s] = true
	}
	for _, r := range registrations {
		if r.New == nil || have[r.Spec.Scheme] {
			continue
		}
		c := r.New(hc)
		for _, s := range r.Spec.Schemes() {
			hc.AddComponent(s, c)
		}
	}
}

// Specs returns the spec of every component, sorted by scheme. The specs are shared
// and must not be changed.
func Specs() []*component.Spec {
	out := make([]*component.Spec, len(registrations))
	for i, r := range registrations {
		out[i] = r.Spec
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Scheme < out[j].Scheme })
	return out
}

// Spec returns the spec of the component serving scheme (an alias such as https
// gives http's spec).
func Spec(scheme string) (*component.Spec, bool) {
	for _, r := range registrations {
		for _, s := range r.Spec.Schemes() {
			if s == scheme {
				return r.Spec, true
			}
		}
	}
	return nil, false
}

// Planned returns why scheme, a component the documentation mentions, is not
// available in this build; ok is false for schemes that are not planned.
func Planned(scheme string) (why string, ok bool) {
	why, ok = planned[scheme]
	return why, ok
}

// PlannedSchemes lists the planned schemes, sorted.
func PlannedSchemes() []string {
	out := make([]string, 0, len(planned))
	for s := range planned {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// SchemeInfo describes one URI scheme.
type SchemeInfo struct {
	Scheme      string
	Direction   component.Direction
	Description string
}

// Schemes lists every scheme Helix knows (aliases included), sorted by name. The
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
	for _, s := range Schemes() {
		if s.Scheme == scheme {
			return s, true
		}
	}
	return SchemeInfo{}, false
}
