package setup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/ask"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/config"
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

// mcpAnswers turns an MCP tool entry's on_elicit and on_sample into the client's
// answers, recording mistakes with fail.
func (r *Runner) mcpAnswers(t config.AgentToolConfig, p string, pos config.Pos, fail func(config.Pos, string, string, string, ...any)) mcpclient.Answers {
	var a mcpclient.Answers
	var err error
	if a.Elicit, err = mcpclient.ParseElicitPolicy(t.OnElicit); err != nil {
		// The shape has reported a value outside its enum.
		a.Elicit = mcpclient.AnswerRefuse
	}
	samplePos := t.OnSamplePos
	if samplePos.Line == 0 {
		samplePos = pos
	}
	samplePath := config.KeyPath(p, "on_sample")
	policy, id, err := mcpclient.ParseSamplePolicy(t.OnSample)
	if err != nil {
		fail(samplePos, samplePath, "", "%s", strings.Replace(err.Error(), "onSample", "on_sample", 1))
		return a
	}
	a.Sample = policy
	if id != "" {
		lookup := r.deps.Agents
		if lookup == nil {
			fail(samplePos, samplePath, "name an agent of agents:, or use on_sample: forward", "on_sample %q: there are no agents to answer with", t.OnSample)
			return a
		}
		if _, declared := lookup(id); !declared {
			fail(samplePos, samplePath, "name an agent of agents:, or use on_sample: forward", "on_sample %q: there is no agent %q", t.OnSample, id)
			return a
		}
		a.Sampler = &agentSampler{id: id, lookup: lookup}
	}
	return a
}

// agentSampler is the sampler of an agent found when a server asks: agents are
// built one after the other, so the one named may come after the agent whose
// tool names it.
type agentSampler struct {
	id     string
	lookup func(string) (mcpclient.Sampler, bool)
}

func (s *agentSampler) Sample(ctx context.Context, q *ask.Sampling) (*ask.SampleAnswer, error) {
	m, _ := s.lookup(s.id)
	if m == nil {
		return nil, fmt.Errorf("agent %q has no model to answer sampling with", s.id)
	}
	return m.Sample(ctx, q)
}

var _ ask.Asker = (*Runner)(nil)

// AsksClient reports whether one of the agent's MCP tools forwards its server's
// questions to the exchange's caller (on_elicit or on_sample: forward): an MCP
// server then serves the agent's tool as one that may ask.
func (r *Runner) AsksClient() bool {
	for _, s := range r.source.servers {
		a := s.opts.Conn.Answers
		if a.Elicit == mcpclient.AnswerForward || a.Sample == mcpclient.AnswerForward {
			return true
		}
	}
	return r.parent != nil && r.parent.AsksClient()
}
