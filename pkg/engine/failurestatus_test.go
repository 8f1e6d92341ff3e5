package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

type conflictErr struct{}

func (conflictErr) Error() string   { return "duplicate key" }
func (conflictErr) HTTPStatus() int { return 409 }

func TestWorkflowFailureStatusOverridesTheErrorsStatus(t *testing.T) {
	failWith := func(err error) []engine.Processor {
		return []engine.Processor{namedStep{name: "s", f: func(context.Context, *exchange.Exchange) error { return err }}}
	}
	cases := []struct {
		name   string
		status engine.FailureStatus
		err    error
		want   int
	}{
		{"every failure", engine.FailureStatus{All: 503}, errors.New("x"), 503},
		{"class of a component's status", engine.FailureStatus{ByClass: map[string]int{"conflict": 422}}, conflictErr{}, 422},
		{"class of a timeout", engine.FailureStatus{ByClass: map[string]int{"timeout": 503}}, fmt.Errorf("w: %w", context.DeadlineExceeded), 503},
		{"other classes keep their status", engine.FailureStatus{ByClass: map[string]int{"timeout": 503}}, conflictErr{}, 409},
		{"fault", engine.FailureStatus{ByClass: map[string]int{"fault": 502}}, errors.New("x"), 502},
		{"none", engine.FailureStatus{}, conflictErr{}, 409},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hc := engine.NewContext("t")
			id := fmt.Sprintf("w%d", i)
			must(t, hc.AddWorkflow(&engine.Workflow{ID: id, FromURI: "direct://" + id, Processors: failWith(c.err), FailureStatus: c.status}))
			startContext(t, hc)
			ex := exchange.NewWithBody(exchange.InOut, "x")
			err := hc.Run(context.Background(), id, ex)
			if got := exchange.HTTPStatus(err); got != c.want {
				t.Errorf("status of the returned error = %d, want %d", got, c.want)
			}
			if got := exchange.HTTPStatus(ex.Exception()); got != c.want {
				t.Errorf("status of the exchange's exception = %d, want %d", got, c.want)
			}
			if !errors.Is(err, c.err) && c.err != (conflictErr{}) {
				t.Errorf("the override hides the error: %v", err)
			}
		})
	}
}
