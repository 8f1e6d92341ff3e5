package server

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/tool"
)

// Questions asked before the task (elicit: before_task). On a tools/call that
// would create a task (2026-07-28), the workflow's leading before_task
// questions are asked in the call itself: while any is unanswered by the
// call's inputResponses the call answers with them (resultType
// "input_required", no task yet); once all are, the durable run starts with
// the answers, which those elicit: steps take instead of parking, and the call
// answers with the task. Each question's id is its wait key, as a parked
// task's input requests are (inputRequestID), so a client answers both alike.
// Nothing is kept between the rounds: the questions follow from the call.

// inputRequiredResult is the answer of a call that asks before its task.
type inputRequiredResult struct {
	ResultType    string         `json:"resultType"`
	InputRequests map[string]any `json:"inputRequests"`
}

// beforeTask returns the answers to task's before_task questions from the
// call's inputResponses, or, while some are unanswered, the InputRequiredResult
// that asks them. A response that does not fit its form is -32602.
func (ts *taskServer) beforeTask(task tool.Task, p *taskParams) (map[string]durable.Resolution, any, *jsonrpc.Error) {
	if ts.workflow == nil {
		return nil, nil, nil
	}
	w, ok := ts.workflow(task.Workflow)
	if !ok {
		return nil, nil, nil // Start reports the missing workflow
	}
	waits, err := durable.BeforeTaskWaits(w, task.Exchange)
	if err != nil {
		return nil, nil, invalidParams(fmt.Sprintf("tool %s cannot ask its questions: %v", p.Name, err))
	}
	if len(waits) == 0 {
		return nil, nil, nil
	}
	var responses map[string]json.RawMessage
	if len(p.InputResponses) > 0 && string(p.InputResponses) != "null" {
		if json.Unmarshal(p.InputResponses, &responses) != nil {
			return nil, nil, invalidParams("inputResponses must be an object of responses keyed by the ids of the inputRequests")
		}
	}
	answers := map[string]durable.Resolution{}
	var unanswered []durable.Wait
	for _, wt := range waits {
		raw, ok := responses[inputRequestID(wt)]
		if !ok {
			unanswered = append(unanswered, wt)
			continue
		}
		r, e := resolutionOf(wt, raw)
		if e != nil {
			return nil, nil, e
		}
		r.Key = wt.Key
		answers[wt.Key] = r
	}
	if len(unanswered) > 0 {
		return nil, inputRequiredResult{ResultType: "input_required",
			InputRequests: waitInputRequests(durable.Run{Waits: unanswered})}, nil
	}
	return answers, nil, nil
}
