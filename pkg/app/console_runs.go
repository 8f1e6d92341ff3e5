package app

import (
	"github.com/arvenza/helix/internal/console/runs"
	"github.com/arvenza/helix/internal/durable"
)

// The console's Runs page (internal/console/runs) reads and operates the
// app's durable runs through the store the management endpoints and the
// helix runs CLI use.
func init() {
	registerConsolePart(consolePart{Name: "runs", Setup: func(a *App) (consoleSetup, error) {
		p := runs.New(runsSource{a})
		return consoleSetup{Page: &p}, nil
	}})
}

// runsSource is the app as the Runs page sees it.
type runsSource struct{ a *App }

// Runs is the app's durable store while it runs; nil when nothing is
// durable.
func (s runsSource) Runs() durable.Runs { return s.a.durableRuns() }
