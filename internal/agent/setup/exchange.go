package setup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/arvenza/helix/internal/agent"
	agentcomp "github.com/arvenza/helix/internal/component/agent"
	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Content types of an answer.
const (
	contentText = "text/plain; charset=utf-8"
	contentJSON = "application/json"
)

var _ engine.Processor = (*Runner)(nil)

// Process runs the agent on ex: the processor of the agent's workflow, reached by
// its trigger, agent:// targets, MCP tool calls and other agents. The body is a
// JSON object {message, session_id} (tool calls, JSON posts) or any other value,
// taken as the message text; the HelixAgentSessionId header gives the session when
// the body does not. The answer becomes the body (text, or the JSON value of the
// output schema) and the run's counts become headers. A failed run is the error.
func (r *Runner) Process(ctx context.Context, ex *exchange.Exchange) error {
	msg := ex.In()
	req := agent.Request{OutputSchema: r.output}
	if err := requestFromBody(msg.Body(), &req); err != nil {
		// The caller's mistake: an HTTP trigger answers 400.
		msg.SetHeader(exchange.HeaderHTTPResponseCode, 400)
		return fmt.Errorf("agent %q: %w", r.id, err)
	}
	return r.process(ctx, ex, req)
}

// StepProcessor is the processor of an `agent:` step: the message is the body as
// text (a JSON body, such as a tool's arguments, stays JSON).
func (r *Runner) StepProcessor() engine.Processor { return stepProcessor{r} } // journaled.go

// errEmptyMessage is the failure of an `agent:` step whose body has no text.
func errEmptyMessage(id string) error {
	return fmt.Errorf("agent %q: the message is empty (the body has no text)", id)
}

func (r *Runner) process(ctx context.Context, ex *exchange.Exchange, req agent.Request) error {
	msg := ex.In()
	if req.SessionID == "" {
		req.SessionID = msg.HeaderString(agentcomp.HeaderSessionID)
	}
	if err := agent.CheckSessionID(req.SessionID); err != nil {
		// The caller's mistake (or attack): an HTTP trigger answers 400.
		msg.SetHeader(exchange.HeaderHTTPResponseCode, 400)
		return fmt.Errorf("agent %q: %w", r.id, err)
	}
	req.Owner = sessionOwner(ctx)
	res, err := r.Run(ctx, req)
	msg.SetHeader(agentcomp.HeaderIterations, res.Iterations)
	msg.SetHeader(agentcomp.HeaderToolCalls, res.ToolCalls)
	msg.SetHeader(agentcomp.HeaderInputTokens, int(res.Usage.InputTokens))
	msg.SetHeader(agentcomp.HeaderOutputTokens, int(res.Usage.OutputTokens))
	if err != nil {
		return err
	}
	if len(r.output) > 0 && res.Structured != nil {
		msg.SetBody(res.Structured)
		msg.SetHeader(exchange.HeaderContentType, contentJSON)
		return nil
	}
	msg.SetBody(res.Text)
	msg.SetHeader(exchange.HeaderContentType, contentText)
	return nil
}

// requestFromBody reads the message (and session) from a body.
func requestFromBody(body any, req *agent.Request) error {
	var obj map[string]any
	switch b := body.(type) {
	case nil:
		return fmt.Errorf("the message is empty: send {\"message\": \"…\"} or text")
	case map[string]any:
		obj = b
	case string:
		obj = jsonObject([]byte(b))
		if obj == nil {
			req.Message = b
		}
	case []byte:
		obj = jsonObject(b)
		if obj == nil {
			req.Message = string(b)
		}
	case json.RawMessage:
		obj = jsonObject(b)
		if obj == nil {
			req.Message = string(b)
		}
	default:
		req.Message = exchange.Stringify(b)
	}
	if obj != nil {
		m, ok := obj["message"]
		if !ok {
			// Some other JSON object: the model reads it as it is.
			req.Message = exchange.Stringify(obj)
		} else if s, isText := m.(string); isText {
			req.Message = s
		} else {
			return fmt.Errorf("message must be a string, got %s", agent.Excerpt(exchange.Stringify(m), maxQuotedBody))
		}
		if sid, ok := obj["session_id"]; ok && sid != nil {
			s, isText := sid.(string)
			if !isText {
				return fmt.Errorf("session_id must be a string")
			}
			req.SessionID = s
		}
	}
	if strings.TrimSpace(req.Message) == "" {
		return fmt.Errorf("the message is empty: send {\"message\": \"…\"} or text")
	}
	return nil
}

// jsonObject decodes data when it is a JSON object, else nil.
func jsonObject(data []byte) map[string]any {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	return m
}

// maxQuotedBody is how much of a caller's value an error about it quotes.
const maxQuotedBody = 100

// sessionOwner keeps one caller from continuing — and so reading — another
// caller's conversation by sending its session id: a call that came through an
// MCP server with a credential (API key, OAuth subject) has its sessions apart
// from every other credential's and every other server's. Calls without one (an
// open server, an HTTP trigger, a workflow) share the plain session ids, and
// never reach a session of a caller with a credential: memory keys the owner
// and the id as separate fields.
func sessionOwner(ctx context.Context) agent.SessionOwner {
	p := security.PrincipalFromContext(ctx)
	if p == "" {
		return agent.SessionOwner{}
	}
	server := ""
	if c := tool.CallerFrom(ctx); c != nil {
		server = c.Server
	}
	return agent.SessionOwner{Server: server, Principal: p}
}
