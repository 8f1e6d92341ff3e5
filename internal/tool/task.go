package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/arvenza/helix/pkg/exchange"
)

// TaskSupport says whether a tool may run as an MCP task: a durable run that the
// caller follows by its id (tasks/get) instead of waiting on the call.
type TaskSupport string

const (
	// TaskForbidden (the zero value): the tool always answers the call itself.
	TaskForbidden TaskSupport = ""
	// TaskOptional: a client that declares the tasks extension gets a task, any
	// other client the result, as from any tool.
	TaskOptional TaskSupport = "optional"
	// TaskRequired: the tool runs only as a task; a client without the tasks
	// extension is refused.
	TaskRequired TaskSupport = "required"
)

// Task is what a durable run of a tool call starts with.
type Task struct {
	// Workflow is the workflow to run.
	Workflow string
	// Exchange is its exchange, as the tool's Invoke would run it.
	Exchange *exchange.Exchange
}

// StartTask decodes and validates the JSON arguments of a call of t as Call does
// and returns the run that the call is as a task. A call that cannot start (bad
// arguments, a tool that is no workflow) gets instead the error result Call would
// answer with, to answer at once.
func (t *Tool) StartTask(ctx context.Context, rawArgs json.RawMessage) (Task, *Result) {
	if t.start == nil {
		res := ErrorResult(fmt.Sprintf("tool %s cannot run as a task: it is no workflow", t.Name))
		return Task{}, &res
	}
	args, err := DecodeArguments(rawArgs)
	if err != nil {
		res := ErrorResult(err.Error())
		return Task{}, &res
	}
	if t.Validate != nil {
		if args, err = safeValidate(t.Validate, args); err != nil {
			res := ErrorResult(fmt.Sprintf("invalid arguments for tool %s: %v", t.Name, err))
			return Task{}, &res
		}
		if args == nil {
			args = map[string]any{}
		}
	}
	return Task{Workflow: t.workflow, Exchange: t.start(ctx, args)}, nil
}

// TaskResult is the result of a call of t whose run ended with ex (decoded from
// the store): what Call answers for the same reply, shaped and checked the same
// way. A run that failed is an error result with the failure's message.
func (t *Tool) TaskResult(ex *exchange.Exchange) Result {
	if err := ex.Exception(); err != nil {
		return ErrorResult(exchange.ClientMessage(err))
	}
	if t.reply == nil {
		return ErrorResult(fmt.Sprintf("tool %s cannot run as a task: it is no workflow", t.Name))
	}
	res, err := t.reply(ex.In())
	if err != nil {
		return ErrorResult(exchange.ClientMessage(err))
	}
	return t.shape(res)
}

// Workflow is the id of the workflow a call of t runs ("" when t is no workflow).
func (t *Tool) Workflow() string { return t.workflow }
