package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

// Checkpoint is the exchange a run's top-level step left, for operators
// (the console's run page).
type Checkpoint struct {
	Segment int
	Index   int
	Name    string
	// Exchange is the exchange after the step, as exchange.Snapshot.Encode
	// wrote it; nil when the step recorded none (a journal entry).
	Exchange json.RawMessage
}

// Checkpoints returns the exchanges the run's steps checkpointed, segment by
// segment, in the order of Steps.
func (rt *Runtime) Checkpoints(ctx context.Context, runID string) ([]Checkpoint, error) {
	run, err := rt.Get(ctx, runID)
	if err != nil {
		return nil, err
	}
	var out []Checkpoint
	for k := 0; k <= run.Segment; k++ {
		steps, err := dbos.GetWorkflowSteps(rt.dctx, segmentID(runID, k), dbos.WithStepsLoadOutput(true))
		if err != nil {
			return nil, fmt.Errorf("durable store: steps of run %s: %w", runID, err)
		}
		for _, s := range steps {
			c := Checkpoint{Segment: k, Index: -1, Name: s.StepName}
			if i, name, ok := strings.Cut(s.StepName, " "); ok {
				if n, err := strconv.Atoi(i); err == nil {
					c.Index, c.Name = n, name
				}
			}
			var raw []byte
			switch o := s.Output.(type) {
			case nil:
			case string:
				raw = []byte(o)
			default:
				raw, _ = json.Marshal(o)
			}
			var res stepResult
			if len(raw) > 0 && json.Unmarshal(raw, &res) == nil {
				c.Exchange = res.Snapshot
			}
			out = append(out, c)
		}
	}
	return out, nil
}
