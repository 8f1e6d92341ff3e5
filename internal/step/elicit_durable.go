package step

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/form"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// An elicit: step of a durable run does not hold the run while the person
// answers: it parks the run on a durable.WaitElicit carrying the form, and the
// answer comes back as the resolution (from an MCP client through MCP Tasks,
// the callback route or `helix runs`), checked here against the form.

// park parks the durable run on the form; timeout: bounds the wait.
func (e *elicitStep) park(msg string) error {
	schema, err := json.Marshal(e.schema)
	if err != nil {
		return fmt.Errorf("elicit: schema: %w", err)
	}
	return durable.Park(durable.Wait{Kind: durable.WaitElicit, Key: e.id, Message: msg, Schema: schema,
		Due: time.Now().Add(e.timeout)})
}

// answerOf turns the resolution of the durable wait into the user's answer:
// an answer's content is checked against the form and gets its defaults, as an
// MCP client's would.
func (e *elicitStep) answerOf(r durable.Resolution) (*ask.ElicitAnswer, error) {
	switch r.Kind {
	case durable.ResolvedAnswered:
		content, err := decodeData(r.Data)
		if err != nil {
			return nil, fmt.Errorf("the answer is not JSON: %w", err)
		}
		m, ok := content.(map[string]any)
		if content == nil {
			m, ok = map[string]any{}, true
		}
		if !ok {
			return nil, fmt.Errorf("the answer is a %T, not an object with the form's fields", content)
		}
		if err := form.Check(e.schema, &m); err != nil {
			return nil, fmt.Errorf("the answer does not match the form: %w", err)
		}
		return &ask.ElicitAnswer{Action: ask.ActionAccept, Content: m}, nil
	case durable.ResolvedDeclined:
		return &ask.ElicitAnswer{Action: ask.ActionDecline}, nil
	case durable.ResolvedTimeout:
		return nil, fmt.Errorf("nobody answered within %s", e.timeout)
	}
	return nil, fmt.Errorf("the wait ended with %q, which is no answer", r.Kind)
}

var _ durable.BeforeTask = (*elicitStep)(nil)

// BeforeTaskWait is the question a before_task: elicit asks in the call that
// would create the task: the wait it would park on, keyed the same, so that
// the answer it starts the run with resolves this step.
func (e *elicitStep) BeforeTaskWait(ex *exchange.Exchange) (durable.Wait, bool, error) {
	if !e.beforeTask {
		return durable.Wait{}, false, nil
	}
	msg, err := uri.Expand(e.message, ex)
	if err != nil {
		return durable.Wait{}, false, fmt.Errorf("elicit: message: %w", err)
	}
	schema, err := json.Marshal(e.schema)
	if err != nil {
		return durable.Wait{}, false, fmt.Errorf("elicit: schema: %w", err)
	}
	return durable.Wait{Kind: durable.WaitElicit, Key: e.id, Message: msg, Schema: schema}, true, nil
}
