package exchange

import (
	"context"
	"errors"
	"net/http"
)

// HTTPStatuser is implemented by errors that know which HTTP status describes
// them: a component classifies its own failures (postgres:// says 409 for a unique
// violation, an input schema 422), and a trigger that answers over HTTP
// (http-server://) asks the error chain through [HTTPStatus]. Only 4xx and 5xx
// statuses count.
type HTTPStatuser interface {
	HTTPStatus() int
}

// ErrorDetailer is implemented by errors that carry details a caller can act on,
// such as the fields an input schema rejected ([{"path": "/age", "message": …}]).
// http-server:// answers them as "errors" next to "error".
type ErrorDetailer interface {
	ErrorDetails() any
}

// Failure classes: the names under which a workflow's on_error.status overrides the
// status of its failures, with the status each has by default.
const (
	ClassBadRequest   = "bad_request"   // 400
	ClassConflict     = "conflict"      // 409
	ClassInvalidInput = "invalid_input" // 422
	ClassTimeout      = "timeout"       // 504
	ClassFault        = "fault"         // 500 and every other status
)

// FailureClasses lists the classes with their default status.
var FailureClasses = map[string]int{
	ClassBadRequest:   http.StatusBadRequest,
	ClassConflict:     http.StatusConflict,
	ClassInvalidInput: http.StatusUnprocessableEntity,
	ClassTimeout:      http.StatusGatewayTimeout,
	ClassFault:        http.StatusInternalServerError,
}

// HTTPStatus returns the HTTP status that describes a failure: the status of the
// outermost error in err's chain that implements [HTTPStatuser] with a 4xx or 5xx
// status (so a wrapper, such as a workflow's on_error override, wins over what it
// wraps); else 504 when the failure is a timeout (context.DeadlineExceeded, or an
// error whose Timeout() reports true, as net and net/http errors do); else 500.
func HTTPStatus(err error) int {
	if err == nil {
		return http.StatusOK
	}
	if status, ok := statusIn(err); ok {
		return status
	}
	if IsTimeout(err) {
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// statusIn walks err's chain (depth first, as errors.As does) for the first
// HTTPStatuser with an error status; one with another status is passed over.
func statusIn(err error) (int, bool) {
	for err != nil {
		if s, ok := err.(HTTPStatuser); ok {
			if status := s.HTTPStatus(); status >= 400 && status <= 599 {
				return status, true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if status, ok := statusIn(e); ok {
					return status, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}

// IsTimeout reports whether err is a deadline that passed.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// FailureClass names the class of an HTTP status (see [FailureClasses]).
func FailureClass(status int) string {
	for class, s := range FailureClasses {
		if s == status && class != ClassFault {
			return class
		}
	}
	return ClassFault
}

// ErrorDetails returns the details of the outermost [ErrorDetailer] in err's
// chain, or nil.
func ErrorDetails(err error) any {
	var d ErrorDetailer
	if errors.As(err, &d) {
		return d.ErrorDetails()
	}
	return nil
}
