package engine

import "errors"

// Interrupt is implemented by errors that stop an exchange as it is, on purpose,
// rather than report a failure: a step that must wait for something the caller
// has to supply first (an MCP client's answers, MCP 2026-07-28 input requests)
// stops the work this way, and the caller resumes it later. A pipeline hands such
// an error to no [ErrorHandler] (no redelivery, no dead letter), and composite
// steps pass it on instead of tolerating it as a failed branch or element.
// Interrupt reports whether the error is one (a type may say no).
type Interrupt interface {
	Interrupt() bool
}

// IsInterrupt reports whether err, or an error it wraps (errors.Join included),
// is an [Interrupt].
func IsInterrupt(err error) bool {
	if err == nil {
		// Every tool call asks, nearly always of nil: errors.As's target would
		// escape to the heap before the nil check could spare it.
		return false
	}
	var i Interrupt
	return errors.As(err, &i) && i.Interrupt()
}
