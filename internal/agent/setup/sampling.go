package setup

import (
	"context"
	"errors"
	"fmt"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/ask"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
)

// Sampler returns the agent's model as an answerer of MCP servers' sampling
// requests (onSample: agent:<id>), or nil when the agent has no model (its
// configuration has errors). The request's own system prompt and messages are
// the conversation; the agent's tools, loop and memory play no part.
func (r *Runner) Sampler() mcpclient.Sampler {
	if r.model == nil {
		return nil
	}
	return &modelSampler{agent: r.id, model: r.model}
}

type modelSampler struct {
	agent string
	model agent.Model
}

func (s *modelSampler) Sample(ctx context.Context, q *ask.Sampling) (*ask.SampleAnswer, error) {
	req := &agent.ModelRequest{System: q.SystemPrompt}
	for i, m := range q.Messages {
		if m.Data != nil {
			return nil, fmt.Errorf("agent %q answers text sampling only; message %d is %s", s.agent, i, m.MIMEType)
		}
		role := agent.RoleUser
		if m.Role == string(agent.RoleAssistant) {
			role = agent.RoleAssistant
		}
		req.Messages = append(req.Messages, agent.Message{Role: role, Text: m.Text})
	}
	if len(req.Messages) == 0 {
		return nil, errors.New("the sampling request has no messages")
	}
	res, err := s.model.Generate(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("agent %q's model: %w", s.agent, err)
	}
	return &ask.SampleAnswer{Model: "agent:" + s.agent, StopReason: "endTurn",
		Message: ask.Message{Role: string(agent.RoleAssistant), Text: res.Message.Text}}, nil
}
