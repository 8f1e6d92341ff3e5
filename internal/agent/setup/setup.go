// Package setup turns an agent's configuration (config.AgentConfig: an `agents:`
// entry or an inline `agent:` step) into a running agent: the provider's model
// (openai or anthropic), the loop settings, and its tools — entries of the
// application's tool catalogue (workflows, `tools:` entries, other agents) and the
// tools of MCP servers — combined into one tool set per run.
//
// Building happens in two phases, because agents may call each other and the
// catalogue only knows every agent once all are registered: [Build] checks the
// configuration and makes the model (no side effects: nothing is sent, no process
// is spawned), then [Runner.Resolve] looks up the catalogue entries. MCP servers
// start with [Runner.Start] (stdio servers are spawned then) and stop with
// [Runner.Stop].
//
// API keys: model.api_key, with its ${env:NAME} already resolved by the
// configuration; when it is empty, OPENAI_API_KEY or ANTHROPIC_API_KEY from the
// environment, as the providers' SDKs read them. Keys never appear in errors.
package setup

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arvenza/helix/internal/agent"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/internal/registry"
	"github.com/arvenza/helix/pkg/engine"

	"go.yaml.in/yaml/v3"
)

// Providers.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// Tool entry types of an agent's tools:.
const (
	ToolMCP      = "mcp"
	ToolWorkflow = "workflow"
	ToolTool     = "tool"
	ToolAgent    = "agent"
	ToolPipeline = "pipeline"
)

// MaxDepth bounds how deeply agents may call each other (directly or through
// workflows) within one run: a loop between agents fails with a clear error
// instead of spending tokens until a timeout.
const MaxDepth = 8

// Deps are what agents get from the application. The zero value is valid.
type Deps struct {
	// Logger receives the agents' logs; nil means slog.Default().
	Logger *slog.Logger
	// HTTPClient sends the providers' requests; nil means a client shared by all
	// providers whose transport keeps enough idle connections for many concurrent
	// agents.
	HTTPClient *http.Client
	// Getenv reads the providers' API key variables when model.api_key is empty;
	// nil means os.Getenv.
	Getenv func(string) string
	// Stderr receives the stderr of stdio MCP servers; nil means os.Stderr.
	Stderr io.Writer
	// Agents finds the agent an MCP tool's on_sample: agent:<id> names: declared
	// reports whether the application has it; the sampler (nil until that agent is
	// built) is looked up again when a server asks. Nil: no agents.
	Agents func(id string) (s mcpclient.Sampler, declared bool)
}

// Runner is one built agent: its model, its tools and its counters. Run and
// Process are safe for concurrent use once Resolve has been called.
type Runner struct {
	id     string
	cfg    config.AgentConfig
	path   string
	deps   Deps
	agent  *agent.Agent
	model  agent.Model // nil when the configuration has errors; see Sampler
	source *toolSource
	stats  counters
	// Output is the JSON Schema answers must match, for the Process of an inline
	// `agent:` step (nil for agents: entries).
	output json.RawMessage
	// parent, for a runner made by WithOutput, is the runner it counts into.
	parent *Runner
	// warnings: see Warnings.
	warnings config.Errors
}

// Build checks cfg and builds its runner; path is cfg's YAML path ("agents[0]"),
// used when cfg.Path is empty. All problems are returned, with positions; with
// problems the runner (when not nil) is only good for Resolve, which reports more
// of them, and must not run. Build sends nothing and starts nothing.
func Build(cfg config.AgentConfig, path string, deps Deps) (*Runner, config.Errors) {
	if cfg.Path != "" {
		path = cfg.Path
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Getenv == nil {
		deps.Getenv = os.Getenv
	}
	id := cfg.ID
	if id == "" {
		id = "inline"
	}
	r := &Runner{id: id, cfg: cfg, path: path, deps: deps, source: &toolSource{agent: id}}
	var errs config.Errors
	errorf := func(pos config.Pos, p, format string, args ...any) *config.Error {
		e := &config.Error{Pos: pos, Path: p, Msg: fmt.Sprintf(format, args...)}
		errs = append(errs, e)
		return e
	}
	if t := strings.TrimSpace(cfg.Type); t != "" && !strings.EqualFold(t, "react") {
		errorf(cfg.Pos, config.KeyPath(path, "type"), "agent %q: unknown type %q", id, cfg.Type).Hint = "react is the only agent type"
	}
	model, err := newModel(cfg.Model, deps)
	var notInBuild *registry.NotInBuildError
	if errors.As(err, &notInBuild) {
		errs = append(errs, &config.Error{Pos: providerPos(cfg), Path: config.KeyPath(config.KeyPath(path, "model"), "provider"), Msg: err.Error()})
	} else if err != nil {
		mpos := cfg.Model.Pos
		if mpos.Line == 0 {
			mpos = cfg.Pos
		}
		e := errorf(mpos, config.KeyPath(path, "model"), "agent %q: %v", id, err)
		var pe *providerError
		if errors.As(err, &pe) {
			e.Hint = pe.hint
		}
	}
	for i, t := range cfg.Tools {
		errs = append(errs, r.addTool(i, t)...)
	}
	r.model = model
	if model == nil {
		// The runner still resolves its tools, so that one validation reports
		// unknown tool ids too; it cannot run.
		return r, errs
	}
	a, err := agent.New(agent.Config{
		ID:                   id,
		SystemPrompt:         cfg.SystemPrompt,
		MaxIterations:        cfg.MaxIterations,
		Timeout:              cmp.Or(cfg.Timeout, DefaultTimeout),
		ToolTimeout:          cfg.ToolTimeout,
		ParallelToolCalls:    cfg.ParallelToolCalls,
		MaxToolCallsPerTurn:  cfg.MaxToolCallsPerTurn,
		MaxParallelToolCalls: cfg.MaxParallelToolCalls,
		MaxToolBytes:         cfg.MaxToolBytes,
		MemoryWindow:         cfg.Memory.Window,
		MaxSessions:          cfg.Memory.MaxSessions,
		MemoryBytes:          cfg.Memory.MaxBytes,
		Stream:               cfg.Stream,
	}, model, r.source)
	if err != nil {
		return r, append(errs, &config.Error{Pos: cfg.Pos, Path: path, Msg: err.Error()})
	}
	r.agent = a
	return r, errs
}

// providerPos is where model.provider's value is written (the model's own
// position when the node is not at hand).
func providerPos(cfg config.AgentConfig) config.Pos {
	pos := cfg.Model.Pos
	if pos.Line == 0 {
		pos = cfg.Pos
	}
	if n := cfg.Model.Node; n != nil && n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "provider" {
				pos.Line, pos.Col = n.Content[i+1].Line, n.Content[i+1].Column
			}
		}
	}
	return pos
}

// DefaultTimeout bounds a run of an agent whose configuration sets no timeout:
// a provider that stalls must not hold its caller (an HTTP request, an MCP call)
// forever.
const DefaultTimeout = 5 * time.Minute

// DefaultOpenAIModel is the model of an agent written without model: when
// OPENAI_MODEL is not set: a small, cheap tool-calling model.
const DefaultOpenAIModel = "gpt-4o-mini"

// providerError is a model configuration problem with advice.
type providerError struct {
	msg, hint string
}

func (e *providerError) Error() string { return e.msg }

// newModel builds the provider's model. Headers go out with every request.
func newModel(m config.ModelConfig, deps Deps) (agent.Model, error) {
	provider := strings.ToLower(strings.TrimSpace(m.Provider))
	if m.Model == "" && provider != "" {
		return nil, &providerError{"model.model is required", "the model name, for example gpt-4o-mini or claude-sonnet-4-20250514"}
	}
	client := deps.HTTPClient
	if client == nil {
		client = defaultModelClient()
	}
	if len(m.Headers) > 0 {
		base := client.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c := &http.Client{}
		*c = *client
		c.Transport = &headerTransport{base: base, headers: m.Headers}
		client = c
	}
	key := m.APIKey
	// Model APIs echo what they were sent in some errors: the API key and the
	// configured headers (credentials, mostly) are redacted wherever text goes out.
	redact.AddSecret(key)
	for _, v := range m.Headers {
		redact.AddSecret(v)
	}
	if provider == "" {
		return nil, &providerError{"model.provider is required", "use openai (any OpenAI-compatible server with base_url) or anthropic"}
	}
	p, ok, err := providers.Lookup(provider)
	if err != nil {
		return nil, err // left out of this build (*registry.NotInBuildError)
	}
	if !ok {
		pe := &providerError{msg: fmt.Sprintf("unknown model provider %q", m.Provider), hint: config.DidYouMean(provider, []string{ProviderOpenAI, ProviderAnthropic})}
		if pe.hint == "" {
			pe.hint = "use openai (any OpenAI-compatible server with base_url) or anthropic"
		}
		return nil, pe
	}
	if key == "" {
		key = deps.Getenv(p.APIKeyEnv)
		redact.AddSecret(key)
	}
	return p.New(ModelSettings{Model: m.Model, APIKey: key, BaseURL: m.BaseURL,
		Temperature: m.Temperature, MaxTokens: m.MaxTokens, HTTPClient: client})
}

// modelIdleConnsPerHost is how many idle connections the default provider client
// keeps per host. Agents of one application usually talk to one model host, often
// many at once: with Go's default of 2, all but two of them would dial a new
// connection (and TLS handshake) for every request.
const modelIdleConnsPerHost = 100

// defaultModelClient is the providers' client when Deps has none: one for the
// process, so that all agents share its idle connections. It is
// http.DefaultTransport's configuration (proxy from the environment, timeouts,
// HTTP/2) with more idle connections per host; idle ones still close after
// IdleConnTimeout.
var defaultModelClient = sync.OnceValue(func() *http.Client {
	dt, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultClient // replaced by the program: its choice
	}
	t := dt.Clone()
	t.MaxIdleConnsPerHost = modelIdleConnsPerHost
	t.MaxIdleConns = max(t.MaxIdleConns, modelIdleConnsPerHost)
	return &http.Client{Transport: t}
})

// headerTransport adds model.headers (a gateway's own headers) to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// ID is the agent's id ("inline" for an `agent:` step without one).
func (r *Runner) ID() string { return r.id }

// Config is the configuration the runner was built from.
func (r *Runner) Config() config.AgentConfig { return r.cfg }

// WithOutput returns a runner sharing r's model, tools and counters whose
// exchange processing answers in the JSON of schema (an `agent:` step inside a
// tool with output fields).
func (r *Runner) WithOutput(schema json.RawMessage) *Runner {
	return &Runner{id: r.id, cfg: r.cfg, path: r.path, deps: r.deps, agent: r.agent, source: r.source,
		output: schema, parent: r.counterOwner()}
}

// counterOwner is the runner whose counters a run adds to.
func (r *Runner) counterOwner() *Runner {
	if r.parent != nil {
		return r.parent
	}
	return r
}

// Start starts the agent's MCP servers (stdio servers are spawned now). When one
// fails, those started are stopped.
func (r *Runner) Start(ctx context.Context) error {
	for i, s := range r.source.servers {
		if err := s.start(ctx); err != nil {
			for _, started := range r.source.servers[:i] {
				_ = started.stop(context.WithoutCancel(ctx))
			}
			return fmt.Errorf("agent %q: %w", r.id, err)
		}
	}
	return nil
}

// Stop stops the agent's MCP servers (stdio subprocesses are terminated).
func (r *Runner) Stop(ctx context.Context) error {
	var errs []error
	for i := len(r.source.servers) - 1; i >= 0; i-- {
		if err := r.source.servers[i].stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("agent %q: %w", r.id, err))
		}
	}
	return errors.Join(errs...)
}

// Warnings are the agent's findings that do not stop it from being built (mTLS
// files not found where the configuration is validated).
func (r *Runner) Warnings() config.Errors { return r.warnings }

// HasServices reports whether the agent has MCP servers to start and stop.
func (r *Runner) HasServices() bool { return len(r.source.servers) > 0 }

type depthKey struct{}

// chain is the agents running in a context, outermost first.
func chain(ctx context.Context) []string {
	c, _ := ctx.Value(depthKey{}).([]string)
	return c
}

// DepthError is a run refused because agents called each other too deeply.
type DepthError struct {
	Chain []string
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("agents call each other more than %d deep (%s): is there a loop between their tools?", MaxDepth, strings.Join(e.Chain, " → "))
}

// Run answers req and counts the run. Agents calling agents (through tools,
// workflows or agent:// targets) are refused beyond MaxDepth.
func (r *Runner) Run(ctx context.Context, req agent.Request) (*agent.Result, error) {
	outer := chain(ctx)
	calls := append(slices.Clone(outer), r.id)
	st := &r.counterOwner().stats
	st.runs.Add(1)
	if len(calls) > MaxDepth {
		st.errors.Add(1)
		return &agent.Result{}, &DepthError{Chain: calls}
	}
	ctx = context.WithValue(ctx, depthKey{}, calls)
	if r.agent == nil {
		st.errors.Add(1)
		return &agent.Result{}, fmt.Errorf("agent %q was not built", r.id)
	}
	res, err := r.agent.Run(ctx, req)
	if res == nil {
		res = &agent.Result{}
	}
	st.iterations.Add(uint64(res.Iterations))
	st.toolCalls.Add(uint64(res.ToolCalls))
	st.inputTokens.Add(uint64(max(res.Usage.InputTokens, 0)))
	st.outputTokens.Add(uint64(max(res.Usage.OutputTokens, 0)))
	if err != nil {
		st.errors.Add(1)
	}
	return res, err
}

// Stats are an agent's totals since it was built.
type Stats struct {
	Runs, Errors, Iterations, ToolCalls, InputTokens, OutputTokens uint64
}

type counters struct {
	runs, errors, iterations, toolCalls, inputTokens, outputTokens atomic.Uint64
}

// Stats returns the agent's totals (those of the runners WithOutput made from it
// included).
func (r *Runner) Stats() Stats {
	st := &r.counterOwner().stats
	return Stats{Runs: st.runs.Load(), Errors: st.errors.Load(), Iterations: st.iterations.Load(),
		ToolCalls: st.toolCalls.Load(), InputTokens: st.inputTokens.Load(), OutputTokens: st.outputTokens.Load()}
}

// Description is what the manifest says about an agent: never a key or a secret.
type Description struct {
	ID, Type, Provider, Model string
	// Tools are the ids of catalogue entries and the names of MCP tool entries.
	Tools []string
	// Capabilities: tools, memory, streaming, structured_output.
	Capabilities []string
}

// Describe returns the agent's public description.
func (r *Runner) Describe() Description {
	typ := r.cfg.Type
	if typ == "" {
		typ = "react"
	}
	d := Description{ID: r.id, Type: typ, Provider: strings.ToLower(r.cfg.Model.Provider), Model: r.cfg.Model.Model}
	for _, t := range r.cfg.Tools {
		if t.Name != "" {
			d.Tools = append(d.Tools, t.Name)
		}
	}
	if len(r.cfg.Tools) > 0 {
		d.Capabilities = append(d.Capabilities, "tools")
	}
	// Conversation memory per session_id is always there (bounded by memory.window).
	d.Capabilities = append(d.Capabilities, "memory")
	if r.cfg.Stream {
		d.Capabilities = append(d.Capabilities, "streaming")
	}
	if len(r.cfg.Output) > 0 || len(r.output) > 0 {
		d.Capabilities = append(d.Capabilities, "structured_output")
	}
	return d
}

var _ engine.Processor = (*Runner)(nil)
