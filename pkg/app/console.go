package app

import (
	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/pkg/engine"
)

// The web console (internal/console) is assembled from parts: each page's
// console_<page>.go file registers one with registerConsolePart in an init
// function, so that a page is one file here and one package there, and no
// part needs a field of App.

// consolePart is one page of the console, with what it needs from the engine.
type consolePart struct {
	// Name names the part in errors ("exchanges").
	Name string
	// Setup is called once by Build when the console is on. It may return a
	// tracer (added to the engine's tracers beside OpenTelemetry's; nil for
	// none), the page (nil when the part has nothing to show in this app) and
	// a stop function called by Stop (nil for none).
	Setup func(a *App) (consoleSetup, error)
}

// consoleSetup is what a part's Setup returns.
type consoleSetup struct {
	Tracer engine.Tracer
	Page   *console.Page
	Stop   func()
}

var consoleParts []consolePart

// registerConsolePart adds p to the console; init functions only.
func registerConsolePart(p consolePart) { consoleParts = append(consoleParts, p) }
