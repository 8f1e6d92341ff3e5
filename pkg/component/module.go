package component

import (
	"fmt"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Module is everything Helix needs to know about one component: its [Spec] (which
// also carries the scheme's traits: fresh exchanges, singleton, trace hook) and how
// to build it. A component package registers its module from an init function:
//
//	func init() { component.Register(component.Module{Spec: Spec, New: newForApp}) }
//
// and a blank import of the package (internal/component/all) puts it into the build.
type Module struct {
	// Spec describes the component; it must pass [Spec.Check].
	Spec *Spec
	// New builds the component for one application. A nil New means the
	// component is built and added by the application itself, with wiring a
	// module cannot see (the MCP client and server).
	New func(env Env) (Component, error)

	// pkg is the import path of the package that registered the module: the
	// folder that owns everything about its scheme.
	pkg string
}

// Package returns the import path of the package that registered the module
// (github.com/arvenza/helix/internal/component/kafka): the one place allowed to
// know the scheme by name.
func (m Module) Package() string { return m.pkg }

// callerPackage returns the import path of the package whose code is skip frames
// up the stack, from its function name ("…/component/kafka.init.0"); it does not
// depend on file paths, so -trimpath builds give the same answer.
func callerPackage(skip int) string {
	pc, _, _, ok := runtime.Caller(skip + 1)
	if !ok {
		return ""
	}
	fn := runtime.FuncForPC(pc)
	if fn == nil {
		return ""
	}
	name := fn.Name()
	slash := strings.LastIndexByte(name, '/')
	if dot := strings.IndexByte(name[slash+1:], '.'); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}

// Env is what a module's New gets: the application the component is built for.
type Env struct {
	// Engine is the application's engine context, a *engine.Context. It is
	// typed any because pkg/engine imports this package; components that run
	// workflows (agent://, pipeline://, tool://) keep it.
	Engine any
	// Logger returns the application's logger; it may be called at any time.
	Logger func() *slog.Logger
	// Settings is the module's own helix.<scheme> block as its settings decoder
	// returned it (see internal/config's module settings), or nil when the
	// configuration has none.
	Settings any
}

// SpanKind is the kind of the span of an exchange a trigger started, named as
// OpenTelemetry names them; "" means internal.
type SpanKind string

// Span kinds a trigger may declare.
const (
	SpanInternal SpanKind = ""
	SpanServer   SpanKind = "server"
	SpanConsumer SpanKind = "consumer"
)

// KeyValue is one span attribute.
type KeyValue struct {
	Key, Value string
}

// TraceInfo is what a trigger contributes to the span of an exchange it started:
// the span kind and attributes (semantic conventions such as http.request.method
// or messaging.destination.name). It is plain data so that components need no
// tracing library to describe their spans.
type TraceInfo struct {
	Kind       SpanKind
	Attributes []KeyValue
}

// TraceHook gives the span kind and attributes of an exchange that the trigger
// trigger started. It is called for every such exchange when tracing is on, so it
// must be cheap and safe for concurrent use; ex and trigger must not be changed.
type TraceHook func(ex *exchange.Exchange, trigger *uri.URI) TraceInfo

// registry holds the modules of this build and the schemes left out of it.
var registry struct {
	sync.RWMutex
	modules  []Module
	byScheme map[string]int    // scheme or alias → index in modules
	absent   map[string]string // scheme → why it is not in this build
}

// Register adds a module to this build; component packages call it from init.
// Registering a scheme (or alias) twice, a module without a spec or a spec that
// fails [Spec.Check] is a programming mistake and panics, at start-up, like
// registering an SQL driver twice.
func Register(m Module) {
	if m.Spec == nil {
		panic("component.Register: module without a spec")
	}
	m.pkg = callerPackage(1)
	if err := m.Spec.Check(); err != nil {
		panic(fmt.Sprintf("component.Register %s://: %v", m.Spec.Scheme, err))
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.byScheme == nil {
		registry.byScheme = map[string]int{}
	}
	for _, s := range m.Spec.Schemes() {
		if _, dup := registry.byScheme[s]; dup {
			panic(fmt.Sprintf("component.Register: scheme %s:// registered twice", s))
		}
		if _, dup := registry.absent[s]; dup {
			panic(fmt.Sprintf("component.Register: scheme %s:// is also registered as left out of the build", s))
		}
	}
	registry.modules = append(registry.modules, m)
	for _, s := range m.Spec.Schemes() {
		registry.byScheme[s] = len(registry.modules) - 1
	}
}

// RegisterAbsent records that the component of scheme is left out of this build,
// and why ("built with -tags helix_nokafka"): a configuration naming the scheme, or
// its helix.<scheme> settings, then gets "not available in this build" with that
// reason instead of a did-you-mean.
func RegisterAbsent(scheme, why string) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.byScheme[scheme]; dup {
		panic(fmt.Sprintf("component.RegisterAbsent: scheme %s:// is registered", scheme))
	}
	if registry.absent == nil {
		registry.absent = map[string]string{}
	}
	registry.absent[scheme] = why
}

// Modules returns the registered modules, sorted by scheme. The specs are shared
// and must not be changed.
func Modules() []Module {
	registry.RLock()
	out := append([]Module(nil), registry.modules...)
	registry.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Scheme < out[j].Spec.Scheme })
	return out
}

// Lookup returns the module serving scheme (an alias such as https gives http's
// module); scheme is compared without regard to case.
func Lookup(scheme string) (Module, bool) {
	registry.RLock()
	defer registry.RUnlock()
	i, ok := registry.byScheme[strings.ToLower(scheme)]
	if !ok {
		return Module{}, false
	}
	return registry.modules[i], true
}

// SpecOf returns the spec of the module serving scheme, nil when none does.
func SpecOf(scheme string) *Spec {
	if m, ok := Lookup(scheme); ok {
		return m.Spec
	}
	return nil
}

// Absent returns why the component of scheme is left out of this build; ok is
// false when it is not (registered, or never heard of).
func Absent(scheme string) (why string, ok bool) {
	registry.RLock()
	defer registry.RUnlock()
	why, ok = registry.absent[strings.ToLower(scheme)]
	return why, ok
}

// AbsentSchemes lists the schemes left out of this build, sorted.
func AbsentSchemes() []string {
	registry.RLock()
	out := make([]string, 0, len(registry.absent))
	for s := range registry.absent {
		out = append(out, s)
	}
	registry.RUnlock()
	sort.Strings(out)
	return out
}

// StartsFresh reports whether exchanges that the trigger URI starts carry nothing
// from another workflow (see [Spec.FreshExchanges]); false for a URI without a
// scheme or with one no module serves.
func StartsFresh(trigger string) bool {
	scheme, _, ok := strings.Cut(trigger, "://")
	if !ok {
		return false
	}
	sp := SpecOf(scheme)
	return sp != nil && sp.FreshExchanges
}
