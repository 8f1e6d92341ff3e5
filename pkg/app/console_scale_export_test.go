package app

import (
	"reflect"

	"github.com/arvenza/helix/internal/console/capture"
)

// ConsoleCapture is the console's capture among the engine's tracers (nil when
// the console is off). The tracers are a console.Tee, a slice of tracers: the
// capture is found among its elements rather than kept in an App field only
// tests would read.
func ConsoleCapture(a *App) *capture.Capture {
	v := reflect.ValueOf(a.hc.Tracer())
	if v.Kind() != reflect.Slice {
		return nil
	}
	for i := range v.Len() {
		if c, ok := v.Index(i).Interface().(*capture.Capture); ok {
			return c
		}
	}
	return nil
}
