package server

import (
	"reflect"
	"testing"

	"github.com/arvenza/helix/internal/component/mcp/server/requeststate"
	"github.com/arvenza/helix/pkg/exchange"
)

func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	s := &snapshot{Body: map[string]any{"n": int64(3), "f": 1.5, "b": []byte{0, 1}, "l": []any{"x", true, nil}},
		Headers: map[string]any{"X": "y"}, Variables: map[string]any{"v": []byte("kept")}}
	raw, ok := encodeSnapshot(s)
	if !ok {
		t.Fatal("not encodable")
	}
	back, ok := decodeSnapshot(raw)
	if !ok || !reflect.DeepEqual(back, s) {
		t.Fatalf("decoded %#v, want %#v", back, s)
	}
	type opaque struct{}
	for _, bad := range []*snapshot{{Body: opaque{}}, {Body: "x", Headers: map[string]any{"t": opaque{}}}, {Body: string(make([]byte, maxSnapshotBytes+1))}} {
		if _, ok := encodeSnapshot(bad); ok {
			t.Errorf("encoded %T", bad.Body)
		}
	}
	if _, ok := decodeSnapshot([]byte("{not json")); ok {
		t.Error("decoded garbage")
	}
}

// A checkpoint whose step is no longer the one that asked starts the run over,
// leaving the exchange as it is.
func TestResumeChecksTheStep(t *testing.T) {
	t.Parallel()
	raw, _ := encodeSnapshot(&snapshot{Body: "snap"})
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
