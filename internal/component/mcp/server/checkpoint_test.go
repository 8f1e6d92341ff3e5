package server

import (
	"reflect"
	"testing"

	"github.com/arvenza/helix/internal/component/mcp/server/requeststate"
	"github.com/arvenza/helix/pkg/exchange"
)

// The checkpoint is the exchange before the step that stopped; one the
// snapshot codec cannot keep, or over the state's budget, is left out (the
// retry starts over).
func TestCheckpointIsTheExchangeBeforeTheStep(t *testing.T) {
	t.Parallel()
	steps := []string{"a.yaml:1:3 set-body", "a.yaml:2:3 elicit"}
	type opaque struct{}
	for _, c := range []struct {
		body any
		kept bool
	}{
		{map[string]any{"n": int64(3), "b": []byte{0, 1}}, true},
		{opaque{}, false},
		{string(make([]byte, maxSnapshotBytes+1)), false},
	} {
		r := &resumePoint{}
		ex := exchange.NewWithBody(exchange.InOut, c.body)
		r.Start(steps, ex)
		r.Before(0, ex)
		r.Before(1, ex)
		cp := r.checkpoint()
		if (cp != nil) != c.kept {
			t.Fatalf("%T: checkpoint %v", c.body, cp)
		}
		if cp == nil {
			continue
		}
		s, err := exchange.DecodeSnapshot(cp.Snapshot)
		if err != nil || cp.Step != 1 || cp.Name != steps[1] || !reflect.DeepEqual(s.Body, c.body) {
			t.Fatalf("checkpoint %+v (%v)", cp, err)
		}
	}
}

// A checkpoint whose step is no longer the one that asked starts the run over,
// leaving the exchange as it is.
func TestResumeChecksTheStep(t *testing.T) {
	t.Parallel()
	raw, _ := (&exchange.Snapshot{Body: "snap"}).Encode(0)
	steps := []string{"a.yaml:1:3 set-body", "a.yaml:2:3 elicit"}
	for _, c := range []struct {
		cp   requeststate.Checkpoint
		want int
		body string
	}{
		{requeststate.Checkpoint{Step: 1, Name: "a.yaml:2:3 elicit", Snapshot: raw}, 1, "snap"},
		{requeststate.Checkpoint{Step: 1, Name: "a.yaml:9:3 elicit", Snapshot: raw}, 0, "fresh"},
		{requeststate.Checkpoint{Step: 5, Name: "a.yaml:2:3 elicit", Snapshot: raw}, 0, "fresh"},
		{requeststate.Checkpoint{Step: 1, Name: "a.yaml:2:3 elicit", Snapshot: []byte("[")}, 0, "fresh"},
	} {
		ex := exchange.NewWithBody(exchange.InOut, "fresh")
		r := &resumePoint{from: &c.cp, fresh: map[string]any{HeaderRequestState: "verified"}}
		if got := r.Start(steps, ex); got != c.want || ex.In().Body() != c.body {
			t.Errorf("%+v: start %d body %v, want %d %v", c.cp.Name, got, ex.In().Body(), c.want, c.body)
		}
		if c.want == 1 && ex.In().Header(HeaderRequestState) != "verified" {
			t.Error("the round's own headers were lost")
		}
	}
}
