package exchange_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/arvenza/helix/pkg/exchange"
)

type withStatus int

func (s withStatus) Error() string   { return fmt.Sprintf("status %d", int(s)) }
func (s withStatus) HTTPStatus() int { return int(s) }

func TestHTTPStatusOfAnErrorChain(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, 200},
		{errors.New("x"), 500},
		{fmt.Errorf("a: %w", withStatus(409)), 409},
		{fmt.Errorf("outer: %w", fmt.Errorf("a: %w", withStatus(422))), 422},
		// The outermost status wins: a wrapper overrides what it wraps.
		{fmt.Errorf("%w", errors.Join(errors.New("x"), withStatus(503), withStatus(409))), 503},
		{errors.Join(errors.New("x"), fmt.Errorf("b: %w", withStatus(409))), 409},
		// A status that is not an error status is passed over.
		{fmt.Errorf("%w: %w", withStatus(200), context.DeadlineExceeded), 504},
		{withStatus(0), 500},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), 504},
	}
	for _, c := range cases {
		if got := exchange.HTTPStatus(c.err); got != c.want {
			t.Errorf("HTTPStatus(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestFailureClass(t *testing.T) {
	for class, status := range exchange.FailureClasses {
		if got := exchange.FailureClass(status); got != class {
			t.Errorf("FailureClass(%d) = %s, want %s", status, got, class)
		}
	}
	for _, s := range []int{401, 403, 404, 502, 503} {
		if got := exchange.FailureClass(s); got != exchange.ClassFault {
			t.Errorf("FailureClass(%d) = %s, want fault", s, got)
		}
	}
}
