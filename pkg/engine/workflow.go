package engine

import (
	"context"
	"encoding/json"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// Processor handles one exchange; see [component.Processor].
type Processor = component.Processor

// ProcessorFunc adapts a function to Processor.
type ProcessorFunc = component.ProcessorFunc

// Kind says what a workflow was declared as; MCP listings mark tools and agents.
type Kind string

const (
	KindWorkflow Kind = "workflow"
	KindTool     Kind = "tool"
	KindAgent    Kind = "agent"
	KindPipeline Kind = "pipeline"
)

// Workflow is a trigger (FromURI) feeding a pipeline of processors. ToURIs are
// appended to Processors as target steps. A workflow without FromURI is never started
// and never exposed as an MCP tool.
type Workflow struct {
	ID          string
	Description string
	FromURI     string
	ToURIs      []string
	Processors  []Processor

	// Interceptors wrap every processor of the pipeline, first one outermost.
	Interceptors []Interceptor
	// ErrorHandler handles a failing step; nil means the error ends the exchange.
	ErrorHandler ErrorHandler
	// FailureStatus overrides the HTTP status of the workflow's failures (on_error).
	FailureStatus FailureStatus

	// Kind, InputSchema and OutputSchema describe the workflow to MCP clients.
	// Schemas are JSON Schema documents; nil InputSchema means "any object".
	Kind         Kind
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	// ValidateInput, when set, checks (and may default) tool arguments before the
	// pipeline runs; its error is reported to the caller without running any step.
	ValidateInput func(args map[string]any) (map[string]any, error)
	// CheckTriggered, when set, checks (and may rewrite) each exchange the
	// workflow's own trigger delivers before the pipeline runs: a workflow with
	// declared input validates a webhook's body with it. Its error fails the
	// exchange without running any step. Run and RunUntilStop skip it: their callers
	// (MCP tool calls) validate with ValidateInput.
	CheckTriggered func(ex *exchange.Exchange) error
	// Source is where the workflow was declared (helix.yaml:12:5), for messages.
	Source string
	// Durable workflows are run by the context's [DurableRunner] (durable: true).
	Durable bool
	// ShownURI is FromURI as written in the configuration, before ${env:…}
	// references were resolved: what MCP clients are shown (helix://workflows),
	// so that a secret in a trigger URI is not. "" means FromURI.
	ShownURI string
}

// Interceptor wraps a processor, for tracing, metrics and the like.
type Interceptor func(next Processor) Processor

// ErrorHandler decides what happens when a step fails. It may retry failed (redelivery),
// send the exchange elsewhere (dead letter), and returns the error that ends the exchange,
// or nil when the failure was handled and the pipeline should go on with the next step.
type ErrorHandler interface {
	HandleError(ctx context.Context, ex *exchange.Exchange, failed Processor, err error) error
}

// Named is implemented by processors that can say which step they are
// ("helix.yaml:14:9 process"); error messages and dead-letter headers use it.
type Named interface {
	Name() string
}

// StepName returns p's name when it has one, else "".
func StepName(p Processor) string {
	if n, ok := p.(Named); ok {
		return n.Name()
	}
	return ""
}
