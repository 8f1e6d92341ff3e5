package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/report"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
)

// Defaults of [Config].
const (
	DefaultMaxIterations = 10
	DefaultMemoryWindow  = 20
	DefaultMaxSessions   = 1000
	DefaultMemoryBytes   = 64 << 20
	DefaultMaxRetries    = 3
	DefaultRetryBackoff  = 500 * time.Millisecond
	DefaultMaxRetryWait  = 30 * time.Second
	// DefaultMaxToolCallsPerTurn is how many tool calls of one model turn run;
	// DefaultMaxParallelToolCalls how many of them at the same time;
	// DefaultMaxToolBytes how large a call's arguments and its result may be.
	DefaultMaxToolCallsPerTurn  = 16
	DefaultMaxParallelToolCalls = 4
	DefaultMaxToolBytes         = 1 << 20
	// repeatedFailures is how many times one tool call (same tool, arguments and
	// error) may fail before the run stops.
	repeatedFailures = 3
)

// Config is an agent's loop settings; zero values mean the defaults.
type Config struct {
	// ID names the agent in errors, logs and progress.
	ID           string
	SystemPrompt string
	// MaxIterations bounds the model turns of one run (default 10); a run that
	// reaches it fails with an error naming the limit.
	MaxIterations int
	// Timeout bounds a whole run; 0: none beyond the caller's context.
	Timeout time.Duration
	// ToolTimeout bounds each tool call; 0: none beyond the run's.
	ToolTimeout time.Duration
	// ParallelToolCalls lets the model ask for several tool calls in one turn and
	// runs them concurrently; nil means on.
	ParallelToolCalls *bool
	// MemoryWindow is how many messages of a session are kept (default 20);
	// MaxSessions how many sessions (default 1000, least recently used evicted).
	MemoryWindow int
	MaxSessions  int
	// MemoryBytes bounds the text all sessions keep together (default 64 MiB);
	// least recently used sessions go first.
	MemoryBytes int64
	// MaxRetries is how many times a 429/5xx is retried (default 3; negative:
	// never). RetryBackoff is the first wait (default 500ms, doubling), used when
	// the provider gives no Retry-After; MaxRetryWait caps every wait (default 30s).
	MaxRetries   int
	RetryBackoff time.Duration
	MaxRetryWait time.Duration
	// MaxToolCallsPerTurn bounds the tool calls of one model turn that run
	// (default 16): the calls beyond it get an error result naming the limit.
	MaxToolCallsPerTurn int
	// MaxParallelToolCalls bounds the calls of one turn that run at the same time
	// when parallel tool calls are on (default 4).
	MaxParallelToolCalls int
	// MaxToolBytes bounds the bytes of a tool call's arguments and of its result
	// (default 1 MiB): an oversize call is not run, an oversize result not passed
	// on; the model gets an error result saying so instead.
	MaxToolBytes int64
	// Stream makes every model turn use the provider's streaming API; the text is
	// reported as it is written, each delta a progress message (current: the
	// iteration, total: MaxIterations) when the run's reporter wants progress.
	Stream bool
}

// Request is one run's input.
type Request struct {
	Message string
	// SessionID, when set, continues that session's conversation; empty: stateless.
	// It must pass [CheckSessionID].
	SessionID string
	// Owner is whose session SessionID names: sessions of different owners are
	// apart even under the same id.
	Owner SessionOwner
	// OutputSchema, when set, is the JSON Schema the final answer must match.
	OutputSchema json.RawMessage
}

// Result is what a run produced.
type Result struct {
	// Text is the final answer (with an output schema: its JSON).
	Text string
	// Structured is the decoded answer when the request had an output schema.
	Structured any
	Usage      Usage
	Iterations int
	ToolCalls  int
}

// Agent runs a ReAct loop over a model and a set of tools. Build it with [New]; Run
// is safe for concurrent use.
type Agent struct {
	cfg      Config
	model    Model
	tools    ToolSource
	current  atomic.Pointer[toolView] // the tools of the latest run and their definitions
	parallel bool
	memory   *memory
	logger   string
}

// ToolSource supplies an agent's tools at the start of each run: a fixed
// *tool.Set, or tools discovered from MCP servers (discovered lazily, so that an
// agent can start before its servers are up). An error fails the run; it should
// say which source failed. Safe for concurrent use.
type ToolSource interface {
	ToolSet(ctx context.Context) (*tool.Set, error)
}

// toolView is a tool set with the definitions the model is shown, computed once
// per set. byModelName holds the tools whose names a model API would refuse, under
// the name the model is shown instead (see modelToolName).
type toolView struct {
	set         *tool.Set
	defs        []ToolDef
	byModelName map[string]*tool.Tool
}

// lookup finds the tool a model called by name.
func (v *toolView) lookup(name string) *tool.Tool {
	if t := v.byModelName[name]; t != nil {
		return t
	}
	if v.set == nil {
		return nil
	}
	return v.set.Lookup(name)
}

// maxModelToolName is the longest tool name OpenAI and Anthropic accept.
const maxModelToolName = 64

// modelToolName is name as model APIs accept it: both take only ASCII letters,
// digits, '_' and '-', at most 64 of them, while MCP tool names may also hold '.'
// and '/' and be up to 128 long. Other characters become '_'; the result is cut
// to 64. ok is false when the name had to change.
func modelToolName(name string) (string, bool) {
	ok := len(name) <= maxModelToolName && name != ""
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i], ok = '_', false
		}
	}
	if len(b) > maxModelToolName {
		b = b[:maxModelToolName]
	}
	if len(b) == 0 {
		b = []byte("tool")
	}
	return string(b), ok
}

// New checks cfg and builds an agent; it starts nothing. tools may be nil (an agent
// without tools); a *tool.Set is a ToolSource.
func New(cfg Config, model Model, tools ToolSource) (*Agent, error) {
	if model == nil {
		return nil, fmt.Errorf("agent %q: no model", cfg.ID)
	}
	if cfg.MaxIterations < 0 || cfg.MemoryWindow < 0 || cfg.MaxSessions < 0 || cfg.Timeout < 0 || cfg.ToolTimeout < 0 ||
		cfg.MaxToolCallsPerTurn < 0 || cfg.MaxParallelToolCalls < 0 || cfg.MaxToolBytes < 0 {
		return nil, fmt.Errorf("agent %q: max_iterations, memory_window, max_sessions, max_tool_calls_per_turn, max_parallel_tool_calls, max_tool_bytes and timeouts must not be negative", cfg.ID)
	}
	if cfg.MaxIterations == 0 {
		cfg.MaxIterations = DefaultMaxIterations
	}
	if cfg.MemoryWindow == 0 {
		cfg.MemoryWindow = DefaultMemoryWindow
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MemoryBytes <= 0 {
		cfg.MemoryBytes = DefaultMemoryBytes
	}
	if cfg.MaxToolCallsPerTurn == 0 {
		cfg.MaxToolCallsPerTurn = DefaultMaxToolCallsPerTurn
	}
	if cfg.MaxParallelToolCalls == 0 {
		cfg.MaxParallelToolCalls = DefaultMaxParallelToolCalls
	}
	if cfg.MaxToolBytes == 0 {
		cfg.MaxToolBytes = DefaultMaxToolBytes
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = DefaultMaxRetryWait
	}
	a := &Agent{cfg: cfg, model: model, tools: tools, parallel: cfg.ParallelToolCalls == nil || *cfg.ParallelToolCalls,
		memory: newMemory(cfg.MemoryWindow, cfg.MaxSessions, cfg.MemoryBytes), logger: "agent/" + cfg.ID}
	a.current.Store(&toolView{})
	return a, nil
}

// toolsFor returns the run's tools: the source's set, with its definitions reused
// while the set stays the same.
func (a *Agent) toolsFor(ctx context.Context) (*toolView, error) {
	if a.tools == nil {
		return a.current.Load(), nil
	}
	set, err := a.tools.ToolSet(ctx)
	if err != nil {
		return nil, err
	}
	if v := a.current.Load(); v.set == set {
		return v, nil
	}
	v := &toolView{set: set}
	if set != nil {
		taken := map[string]bool{}
		for _, t := range set.Tools() {
			taken[t.Name] = true
		}
		for _, t := range set.Tools() {
			schema := t.Input()
			if len(schema) == 0 {
				schema = t.InputSchema
			}
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			name, ok := modelToolName(t.Name)
			if !ok {
				// A name no other tool has, so the model's call finds this one.
				base := name
				for i := 2; taken[name]; i++ {
					suffix := fmt.Sprintf("_%d", i)
					name = base[:min(len(base), maxModelToolName-len(suffix))] + suffix
				}
				taken[name] = true
				if v.byModelName == nil {
					v.byModelName = map[string]*tool.Tool{}
				}
				v.byModelName[name] = t
			}
			v.defs = append(v.defs, ToolDef{Name: name, Description: t.Description, InputSchema: schema})
		}
	}
	a.current.Store(v)
	return v, nil
}

// MaxIterationsError is a run that reached its iteration limit without an answer.
type MaxIterationsError struct {
	Agent string
	Limit int
}

func (e *MaxIterationsError) Error() string {
	return fmt.Sprintf("agent %q: reached max_iterations (%d) without a final answer", e.Agent, e.Limit)
}

// run is Run (observe.go) without the observer.
func (a *Agent) run(ctx context.Context, req Request) (*Result, error) {
	if a.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.cfg.Timeout, fmt.Errorf("agent %q: timeout %s exceeded", a.cfg.ID, a.cfg.Timeout))
		defer cancel()
	}
	res := &Result{}
	var schema *jsonschema.Resolved
	if len(bytes.TrimSpace(req.OutputSchema)) > 0 {
		var err error
		if schema, err = compileSchema(req.OutputSchema); err != nil {
			return res, fmt.Errorf("agent %q: output schema: %w", a.cfg.ID, err)
		}
	}
	tools, err := a.toolsFor(ctx)
	if err != nil {
		return res, fmt.Errorf("agent %q: tools: %w", a.cfg.ID, err)
	}
	var history []Message
	session := sessionKey{owner: req.Owner, id: req.SessionID}
	if req.SessionID != "" {
		if err := CheckSessionID(req.SessionID); err != nil {
			return res, fmt.Errorf("agent %q: %w", a.cfg.ID, err)
		}
		history = a.memory.load(session)
	}
	start := len(history)
	msgs := append(history, Message{Role: RoleUser, Text: req.Message})
	mreq := &ModelRequest{System: a.cfg.SystemPrompt, Tools: tools.defs, ParallelToolCalls: a.parallel, OutputSchema: req.OutputSchema}
	prog := &runProgress{total: float64(a.cfg.MaxIterations)}
	if a.cfg.Stream {
		mreq.OnText = a.textReporter(ctx, res, prog)
	}
	failures := map[failureKey]int{}
	repaired := false
	ro := runObserverFrom(ctx) // observe.go; nil unless the console records the run
	for {
		if res.Iterations == a.cfg.MaxIterations {
			return res, &MaxIterationsError{Agent: a.cfg.ID, Limit: a.cfg.MaxIterations}
		}
		res.Iterations++
		progress := report.ProgressWanted(ctx)
		if progress {
			report.Progress(ctx, prog.next(res.Iterations), prog.total, fmt.Sprintf("agent %s: iteration %d: thinking", a.cfg.ID, res.Iterations))
		}
		mreq.Messages = msgs
		resp, err := a.observedTurn(ctx, ro, res.Iterations, mreq) // observe.go, journal.go
		if err != nil {
			return res, a.runError(ctx, err)
		}
		res.Usage = res.Usage.Add(resp.Usage)
		turn := resp.Message
		turn.Role = RoleAssistant
		msgs = append(msgs, turn)
		if len(turn.ToolCalls) == 0 {
			if schema == nil {
				res.Text = turn.Text
				break
			}
			text, v, verr := checkAnswer(schema, turn.Text)
			if verr == nil {
				res.Text, res.Structured = text, v
				break
			}
			if repaired {
				return res, fmt.Errorf("agent %q: final answer does not match the output schema after a repair attempt: %s", a.cfg.ID, Excerpt(verr.Error(), maxQuotedError))
			}
			repaired = true
			report.Log(ctx, report.LevelWarning, a.logger, map[string]any{"iteration": res.Iterations, "msg": "answer does not match the output schema; asking for a repair", "error": Excerpt(verr.Error(), maxQuotedError)})
			msgs = append(msgs, Message{Role: RoleUser, Text: "Your answer does not match the required JSON Schema: " + Excerpt(verr.Error(), maxQuotedError) +
				"\nReply with only the corrected JSON value, nothing else."})
			continue
		}
		if progress {
			names := make([]string, len(turn.ToolCalls))
			for i, c := range turn.ToolCalls {
				names[i] = c.Name
			}
			report.Progress(ctx, prog.next(res.Iterations), prog.total, fmt.Sprintf("agent %s: iteration %d: calling %s", a.cfg.ID, res.Iterations, strings.Join(names, ", ")))
		}
		run := turn.ToolCalls[:min(len(turn.ToolCalls), a.cfg.MaxToolCallsPerTurn)]
		results, interrupt, jerr := a.callTools(ctx, tools, res.Iterations, run)
		res.ToolCalls += len(run)
		if jerr != nil {
			return res, a.runError(ctx, jerr)
		}
		if interrupt != nil {
			// A tool stopped to ask the MCP client (engine.Interrupt): the agent
			// stops too, so that the question reaches the client now.
			return res, interrupt
		}
		if err := context.Cause(ctx); err != nil {
			return res, a.runError(ctx, err)
		}
		for i, r := range results {
			msgs = append(msgs, r)
			if !r.IsError {
				continue
			}
			c := run[i]
			key := failureKey{name: c.Name, arguments: string(c.Arguments), result: r.Text}
			failures[key]++
			if failures[key] >= repeatedFailures {
				return res, fmt.Errorf("agent %q: tool %s failed %d times with the same arguments: %s", a.cfg.ID, Excerpt(c.Name, maxQuotedName), failures[key], Excerpt(r.Text, maxQuotedError))
			}
		}
		// Every call gets a result (the providers require one per call id); those
		// beyond the limit are not run, and are not failures of their tool.
		for _, c := range turn.ToolCalls[len(run):] {
			msgs = append(msgs, a.refusedCall(c))
		}
	}
	if report.FromContext(ctx) != nil {
		report.Log(ctx, report.LevelInfo, a.logger, map[string]any{"msg": "done", "iterations": res.Iterations, "tool_calls": res.ToolCalls,
			"input_tokens": res.Usage.InputTokens, "output_tokens": res.Usage.OutputTokens})
	}
	if req.SessionID != "" {
		a.memory.append(session, msgs[start:])
	}
	return res, nil
}

// textReporter returns the OnText of a streaming run: each delta becomes a progress
// message of the current iteration, unreduced, since the reporter's contract is to
// drop what its caller cannot take. Without a reporter that wants progress the
// deltas go nowhere (the turn is still streamed, as configured).
func (a *Agent) textReporter(ctx context.Context, res *Result, prog *runProgress) func(string) {
	if !report.ProgressWanted(ctx) {
		return func(string) {}
	}
	return func(delta string) {
		report.Progress(ctx, prog.next(res.Iterations), prog.total, delta)
	}
}

// runProgress numbers the progress messages of a run so that each one advances:
// an MCP server passes on only progress that grows (the protocol requires it), yet
// one iteration reports several things (thinking, text deltas, the tools it calls).
// Message k of iteration i is at i-1 + k/(k+1): inside (i-1, i), strictly
// increasing, so "iteration i of max_iterations" still reads right. Used by the
// run's own goroutine only (providers call OnText on the caller's goroutine).
type runProgress struct {
	iter, k int
	total   float64
}

func (p *runProgress) next(iteration int) float64 {
	if iteration != p.iter {
		p.iter, p.k = iteration, 0
	}
	p.k++
	return float64(iteration-1) + float64(p.k)/float64(p.k+1)
}

// runError names the agent and, when the run's context ended, says why (the
// timeout, or the caller's cancellation).
func (a *Agent) runError(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil {
		if strings.HasPrefix(cause.Error(), "agent ") {
			return cause
		}
		return fmt.Errorf("agent %q: %w", a.cfg.ID, cause)
	}
	return fmt.Errorf("agent %q: %w", a.cfg.ID, err)
}

// generate calls the model, retrying 429 and 5xx: the wait is the provider's
// Retry-After or an exponential backoff, capped by MaxRetryWait.
func (a *Agent) generate(ctx context.Context, req *ModelRequest) (*ModelResponse, error) {
	backoff := a.cfg.RetryBackoff
	for attempt := 0; ; attempt++ {
		resp, err := a.model.Generate(ctx, req)
		if err == nil {
			return resp, nil
		}
		var pe *ProviderError
		if !errors.As(err, &pe) || !pe.Retryable() || attempt >= a.cfg.MaxRetries || ctx.Err() != nil {
			return nil, err
		}
		wait := pe.RetryAfter
		if wait <= 0 {
			wait = backoff
			backoff *= 2
		}
		wait = min(wait, a.cfg.MaxRetryWait)
		report.Log(ctx, report.LevelWarning, a.logger, map[string]any{"msg": "model request failed; retrying", "error": err.Error(), "attempt": attempt + 1, "wait": wait.String()})
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// failureKey identifies a failed tool call: the same tool, arguments and error
// again is a repeated failure.
type failureKey struct{ name, arguments, result string }

// refusedCall is the result of a call beyond max_tool_calls_per_turn.
func (a *Agent) refusedCall(c ToolCall) Message {
	return Message{Role: RoleTool, ToolCallID: c.ID, IsError: true, Text: fmt.Sprintf(
		"not run: this turn asked for more tool calls than max_tool_calls_per_turn (%d); ask for this call again in a later turn", a.cfg.MaxToolCallsPerTurn)}
}

// callTools runs the calls of one turn, concurrently when parallel tool calls are
// on (at most MaxParallelToolCalls at a time), and returns their results in the
// calls' order. It returns when every call has returned. interrupt is the first
// engine.Interrupt a call's workflow stopped with (a question for the MCP client);
// failed is the durable run's journal failing (journal.go).
func (a *Agent) callTools(ctx context.Context, tools *toolView, iteration int, calls []ToolCall) (_ []Message, interrupt, failed error) {
	seen := &interrupts{}
	ctx = context.WithValue(ctx, interruptsKey{}, seen)
	defer func() { interrupt = seen.first() }()
	if j := durable.JournalFrom(ctx); j != nil {
		out, err := a.callToolsJournaled(ctx, j, tools, iteration, calls)
		return out, nil, err
	}
	out := make([]Message, len(calls))
	if !a.parallel || len(calls) == 1 {
		for i, c := range calls {
			out[i] = a.callTool(toolCallContext(ctx, iteration, i), tools, c)
		}
		return out, nil, nil
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, a.cfg.MaxParallelToolCalls)
	for i, c := range calls {
		slots <- struct{}{} // waits while MaxParallelToolCalls calls run
		wg.Go(func() {
			defer func() { <-slots }()
			out[i] = a.callTool(toolCallContext(ctx, iteration, i), tools, c)
		})
	}
	wg.Wait()
	return out, nil, nil
}

// interrupts records the engine.Interrupt errors of one turn's tool calls.
type interrupts struct {
	mu  sync.Mutex
	err error
}

type interruptsKey struct{}

func (i *interrupts) add(err error) {
	i.mu.Lock()
	if i.err == nil {
		i.err = err
	}
	i.mu.Unlock()
}

func (i *interrupts) first() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.err
}

// runCall runs one call; every failure is a tool result with IsError.
func (a *Agent) runCall(ctx context.Context, tools *toolView, c ToolCall) Message {
	msg := Message{Role: RoleTool, ToolCallID: c.ID}
	t := tools.lookup(c.Name)
	if t == nil {
		msg.Text, msg.IsError = fmt.Sprintf("unknown tool %q; available tools: %s", Excerpt(c.Name, maxQuotedName), tools.names()), true
		return msg
	}
	if n := int64(len(c.Arguments)); n > a.cfg.MaxToolBytes {
		msg.Text, msg.IsError = fmt.Sprintf("not run: the arguments of tool %s are %d bytes, more than max_tool_bytes (%d); call it with smaller arguments", c.Name, n, a.cfg.MaxToolBytes), true
		return msg
	}
	r := traceToolCall(ctx, c, func(ctx context.Context) tool.Result { return a.runTool(ctx, t, c) }) // tracing.go
	msg.Text, msg.IsError = resultText(r), r.IsError
	if msg.IsError {
		// An error (such as an input schema's validation error) may quote the
		// model's arguments whole; the model needs what went wrong, not them again.
		msg.Text = Excerpt(msg.Text, maxToolError)
	}
	if n := int64(len(msg.Text)); n > a.cfg.MaxToolBytes {
		msg.Text, msg.IsError = fmt.Sprintf("the result of tool %s is %d bytes, more than max_tool_bytes (%d), and was left out; ask for less (a narrower query, fewer items)", c.Name, n, a.cfg.MaxToolBytes), true
	}
	return msg
}

// runTool calls t within the tool timeout.
func (a *Agent) runTool(ctx context.Context, t *tool.Tool, c ToolCall) tool.Result {
	if a.cfg.ToolTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.cfg.ToolTimeout, fmt.Errorf("tool %s: timeout %s exceeded", c.Name, a.cfg.ToolTimeout))
		defer cancel()
	}
	r, cause := t.Call(ctx, c.Arguments)
	if engine.IsInterrupt(cause) {
		if seen, ok := ctx.Value(interruptsKey{}).(*interrupts); ok {
			seen.add(cause)
		}
		return r
	}
	if cause != nil {
		report.Log(ctx, report.LevelWarning, a.logger, map[string]any{"msg": "tool call failed", "tool": c.Name, "error": cause.Error()})
		if tc := context.Cause(ctx); tc != nil && ctx.Err() != nil {
			r = tool.ErrorResult(tc.Error())
		}
	}
	return r
}

func (v *toolView) names() string {
	if len(v.defs) == 0 {
		return "none"
	}
	names := make([]string, len(v.defs))
	for i, d := range v.defs {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}

// resultText renders a tool result for the model: its text parts, and a note for
// each part a chat model cannot be given as text.
func resultText(r tool.Result) string {
	if len(r.Content) == 1 && r.Content[0].Type == tool.ContentText {
		return r.Content[0].Text
	}
	var b strings.Builder
	for _, c := range r.Content {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch c.Type {
		case tool.ContentText:
			b.WriteString(c.Text)
		case tool.ContentResource:
			if c.Text != "" {
				b.WriteString(c.Text)
			} else {
				fmt.Fprintf(&b, "[resource %s (%s)]", c.URI, c.MIMEType)
			}
		default:
			fmt.Fprintf(&b, "[%s content (%s, %d bytes) omitted]", c.Type, c.MIMEType, len(c.Data))
		}
	}
	if b.Len() == 0 && r.Structured != nil {
		if data, err := json.Marshal(r.Structured); err == nil {
			b.Write(data)
		}
	}
	return b.String()
}

func compileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// checkAnswer decodes a final answer as JSON (a ```json fence is tolerated) and
// validates it against schema; it returns the JSON text without the fence.
func checkAnswer(schema *jsonschema.Resolved, text string) (string, any, error) {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "```") {
		text = strings.TrimPrefix(text, "```json")
		text = strings.TrimPrefix(text, "```")
		text = strings.TrimSuffix(strings.TrimSpace(text), "```")
	}
	text = strings.TrimSpace(text)
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return "", nil, fmt.Errorf("not JSON: %v", err)
	}
	if err := schema.Validate(v); err != nil {
		return "", nil, err
	}
	return text, v, nil
}
