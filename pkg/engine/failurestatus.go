package engine

import "github.com/arvenza/helix/pkg/exchange"

// FailureStatus is a workflow's on_error.status: the HTTP status its failures are
// answered with, overriding what the error itself describes (exchange.HTTPStatus).
// The zero value overrides nothing.
type FailureStatus struct {
	// All, when not 0, is the status of every failure.
	All int
	// ByClass maps a failure class (exchange.FailureClasses: conflict, timeout …)
	// to the status of the failures of that class; classes it does not name keep
	// their status.
	ByClass map[string]int
}

// IsZero reports whether s overrides nothing.
func (s FailureStatus) IsZero() bool { return s.All == 0 && len(s.ByClass) == 0 }

// apply returns err wrapped with the overriding status, or err unchanged.
func (s FailureStatus) apply(err error) error {
	if err == nil || s.IsZero() {
		return err
	}
	status := s.All
	if status == 0 {
		status = s.ByClass[exchange.FailureClass(exchange.HTTPStatus(err))]
	}
	if status == 0 {
		return err
	}
	return &statusError{Status: status, Err: err}
}

// statusError gives a failure the HTTP status a workflow's on_error chose; the
// error it wraps stays reachable (errors.As, errors.Is, its client message).
type statusError struct {
	Status int
	Err    error
}

func (e *statusError) Error() string   { return e.Err.Error() }
func (e *statusError) Unwrap() error   { return e.Err }
func (e *statusError) HTTPStatus() int { return e.Status }
