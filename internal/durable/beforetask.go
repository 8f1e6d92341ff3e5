package durable

import (
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Questions asked before the task: a workflow run as an MCP task may open
// with questions the call itself asks (MCP input-required rounds) before the
// task exists. Their answers start the run ([StartOptions.Answers]): the first
// segment's steps find them with [ResolutionFor] and do not park.

// BeforeTask is implemented by a step that may be asked before the task.
type BeforeTask interface {
	// BeforeTaskWait returns the wait the step would park on, its message
	// evaluated on ex; false when this step is not asked before the task.
	BeforeTaskWait(ex *exchange.Exchange) (Wait, bool, error)
}

// BeforeTaskWaits returns the questions w's leading steps ask before the
// task, in order: those of the top-level steps that say so, up to the first
// that does not.
func BeforeTaskWaits(w *engine.Workflow, ex *exchange.Exchange) ([]Wait, error) {
	var out []Wait
	for _, p := range w.Processors {
		b, ok := p.(BeforeTask)
		if !ok {
			break
		}
		wt, ok, err := b.BeforeTaskWait(ex)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		out = append(out, wt)
	}
	return out, nil
}
