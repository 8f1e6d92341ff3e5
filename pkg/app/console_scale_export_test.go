package app

import (
	"github.com/arvenza/helix/internal/console/capture"
	"github.com/arvenza/helix/pkg/engine"
)

// ConsoleCapture is the console's capture among the engine's tracers (nil when
// the console is off). The tracers are a console.Tee: the capture is found
// among its tracers rather than kept in an App field only tests would read.
func ConsoleCapture(a *App) *capture.Capture {
	t, ok := a.hc.Tracer().(interface{ Tracers() []engine.Tracer })
	if !ok {
		return nil
	}
	for _, tr := range t.Tracers() {
		if c, ok := tr.(*capture.Capture); ok {
			return c
		}
	}
	return nil
}
