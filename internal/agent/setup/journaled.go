package setup

import (
	"context"
	"strings"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Journaled reports that an agent checkpoints its own parts in a durable run:
// each model turn and each tool result is an entry of the run's journal
// (agent/journal.go), not the whole agent one checkpoint (durable.Journaled).
func (r *Runner) Journaled() bool { return true }

// stepProcessor is the processor of an `agent:` step (StepProcessor).
type stepProcessor struct{ r *Runner }

// Journaled: as the agent's own workflow (see Runner.Journaled).
func (stepProcessor) Journaled() bool { return true }

func (p stepProcessor) Process(ctx context.Context, ex *exchange.Exchange) error {
	r := p.r
	req := agent.Request{Message: exchange.Stringify(ex.In().Body()), OutputSchema: r.output}
	if strings.TrimSpace(req.Message) == "" {
		return errEmptyMessage(r.id)
	}
	return r.process(ctx, ex, req)
}

var _ engine.Processor = stepProcessor{}
