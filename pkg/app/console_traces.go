package app

import "github.com/arvenza/helix/internal/console/traces"

// The console's Traces page (internal/console/traces): with helix.tracing on,
// a span processor beside the exporter keeps the last traces for it; with
// tracing off the page says how to switch it on, and nothing is recorded.
func init() {
	registerConsolePart(consolePart{Name: "traces", Setup: func(a *App) (consoleSetup, error) {
		var store *traces.Store
		if a.tracer != nil {
			store = traces.NewStore(traces.Limits{})
			a.tracer.AddSpanProcessor(store) // before Start, which builds the provider
		}
		page := traces.NewPage(store)
		return consoleSetup{Page: &page}, nil
	}})
}
