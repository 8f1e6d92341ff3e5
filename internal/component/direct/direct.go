// Package direct names direct://name: synchronous, in-process request/reply between
// workflows of one context. The caller's exchange runs through the consuming
// workflow's pipeline on the caller's goroutine, so the reply is simply the body
// afterwards and an error in the called workflow is the caller's error.
//
// The implementation is built into the engine (engine.DirectComponent): every
// engine.Context has a direct component from NewContext on, as the spec's Go programs
// expect, and the engine imports no component package. This package gives it the
// same name, registration line and docs as every other component.
package direct

import "github.com/arvenza/helix/pkg/engine"

// Component is the direct:// component.
type Component = engine.DirectComponent

// Spec is the direct:// component's description.
var Spec = engine.DirectSpec

// New returns an empty direct component.
func New() *Component { return engine.NewDirect() }
