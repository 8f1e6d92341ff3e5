package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"sync"

	"github.com/arvenza/helix/internal/component/mcp/server/requeststate"
	"github.com/arvenza/helix/internal/jsonnum"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Resuming an input-required call where it stopped (engine.Resume). Each run
// remembers the exchange before every top-level step; when the run stops on a
// question, the last one (before the step that asked) goes into the requestState
// as the checkpoint, and the retry starts at that step with that exchange: the
// steps before it do not run again. A snapshot that cannot be encoded (a body or
// header that is not plain JSON-like data) or would make the state too large is
// left out: the retry then runs the workflow from its first step.

// maxSnapshotBytes bounds an encoded snapshot, well inside the state's own limit.
const maxSnapshotBytes = 128 << 10

// snapshot is an exchange as a checkpoint keeps it.
type snapshot struct {
	Body      any            `json:"b"`
	Headers   map[string]any `json:"h,omitempty"`
	Variables map[string]any `json:"v,omitempty"`
}

// resumePoint is the engine.Resume of one input-required call.
type resumePoint struct {
	from *requeststate.Checkpoint // the state's, nil: start at the first step
	// fresh are the headers this round sets (HeaderClientCapabilities …): they
	// win over a snapshot's, which are the round's that took it.
	fresh map[string]any

	mu    sync.Mutex
	names []string // of the top-level steps
	step  int
	last  *snapshot // before step; nil before the first
}

var _ engine.Resume = (*resumePoint)(nil)

func (r *resumePoint) Start(steps []string, ex *exchange.Exchange) int {
	r.mu.Lock()
	r.names = steps
	r.mu.Unlock()
	// The step must still be the one that asked (its name holds its position in
	// the file): after a change to the workflow the call starts over.
	if r.from == nil || r.from.Step >= len(steps) || steps[r.from.Step] != r.from.Name {
		return 0
	}
	snap, ok := decodeSnapshot(r.from.Snapshot)
	if !ok {
		return 0
	}
	msg := ex.In()
	msg.SetBody(snap.Body)
	for k := range msg.Headers() {
		msg.RemoveHeader(k)
	}
	for k, v := range snap.Headers {
		msg.SetHeader(k, v)
	}
	for k, v := range r.fresh {
		msg.SetHeader(k, v)
	}
	for k, v := range snap.Variables {
		ex.SetVariable(k, v)
	}
	return r.from.Step
}

func (r *resumePoint) Before(i int, ex *exchange.Exchange) {
	// Deep copies: later steps may change maps and lists in place.
	s := &snapshot{Body: exchange.DeepCopy(ex.In().Body())}
	if h := ex.In().Headers(); len(h) > 0 {
		s.Headers = exchange.DeepCopy(h).(map[string]any)
	}
	if v := ex.Variables(); len(v) > 0 {
		s.Variables = exchange.DeepCopy(v).(map[string]any)
	}
	r.mu.Lock()
	r.step, r.last = i, s
	r.mu.Unlock()
}

// checkpoint is where the run stopped, encoded; nil when it cannot be kept.
func (r *resumePoint) checkpoint() *requeststate.Checkpoint {
	r.mu.Lock()
	step, last, names := r.step, r.last, r.names
	r.mu.Unlock()
	if last == nil || step == 0 || step >= len(names) {
		return nil // stopped at the first step: nothing to skip
	}
	raw, ok := encodeSnapshot(last)
	if !ok {
		return nil
	}
	return &requeststate.Checkpoint{Step: step, Name: names[step], Snapshot: raw}
}

// bytesKey tags a []byte value in an encoded snapshot: {"\u0000bytes": base64}.
const bytesKey = "\x00bytes"

// encodeSnapshot encodes s, or reports that it holds something other than plain
// data (nil, bool, string, numbers, []byte, map[string]any, []any) or is too large.
func encodeSnapshot(s *snapshot) (json.RawMessage, bool) {
	tagged := map[string]any{}
	for key, v := range map[string]any{"b": s.Body, "h": anyMap(s.Headers), "v": anyMap(s.Variables)} {
		t, ok := tagValue(v, 0)
		if !ok {
			return nil, false
		}
		tagged[key] = t
	}
	raw, err := json.Marshal(tagged)
	if err != nil || len(raw) > maxSnapshotBytes {
		return nil, false
	}
	return raw, true
}

func anyMap(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// tagValue is v with []byte values tagged, or false for a value a snapshot cannot keep.
func tagValue(v any, depth int) (any, bool) {
	if depth > 64 {
		return nil, false
	}
	switch x := v.(type) {
	case nil, bool, string, float64, int, int64, json.Number:
		return x, true
	case []byte:
		return map[string]any{bytesKey: base64.StdEncoding.EncodeToString(x)}, true
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			t, ok := tagValue(e, depth+1)
			if !ok {
				return nil, false
			}
			out[k] = t
		}
		return out, true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			t, ok := tagValue(e, depth+1)
			if !ok {
				return nil, false
			}
			out[i] = t
		}
		return out, true
	}
	return nil, false
}

// decodeSnapshot decodes what encodeSnapshot made; numbers come back as the
// int64 or float64 tool arguments have (jsonnum).
func decodeSnapshot(raw json.RawMessage) (*snapshot, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, false
	}
	var all any = m
	if jsonnum.Normalize(&all) != nil {
		return nil, false
	}
	s := &snapshot{Body: untag(m["b"])}
	if h, ok := untag(m["h"]).(map[string]any); ok {
		s.Headers = h
	}
	if v, ok := untag(m["v"]).(map[string]any); ok {
		s.Variables = v
	}
	return s, true
}

func untag(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if b64, ok := x[bytesKey].(string); ok && len(x) == 1 {
			if b, err := base64.StdEncoding.DecodeString(b64); err == nil {
				return b
			}
		}
		for k, e := range x {
			x[k] = untag(e)
		}
	case []any:
		for i, e := range x {
			x[i] = untag(e)
		}
	}
	return v
}
