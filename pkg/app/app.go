// Package app turns a loaded configuration into a running Helix application: an
// engine.Context with every component registered, every workflow and tool built
// from its YAML steps and every agent built as a workflow of its own (agents.go).
// Building validates everything and reports all problems at once, with positions,
// before anything starts; building has no side effects (no listener is opened and
// no MCP subprocess spawned until Start), so [Validate] is simply a build that is
// thrown away.
package app

import (
	"context"
	"errors"
	"github.com/arvenza/helix/internal/gateway"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/arvenza/helix/internal/agent/setup"
	"github.com/arvenza/helix/internal/component/all"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/internal/step"
	_ "github.com/arvenza/helix/internal/step/allsteps" // the step kinds defined outside internal/step
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/internal/tracing/export"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/uri"
)

// Options tune [Build]. The zero value is valid.
type Options struct {
	// Logger receives the application's logs; nil means slog.Default().
	Logger *slog.Logger
	// Stdin and Stdout are the streams of the stdio MCP transport; nil means
	// os.Stdin and os.Stdout. Logs never go to Stdout.
	Stdin  io.Reader
	Stdout io.Writer
	// Version is the Helix version reported by the management manifest; "" means "dev".
	Version string
	// ManagementAddr, when set, replaces helix.management.addr: programs embedding
	// Helix, and tests, pass "127.0.0.1:0" for a free port (see App.ManagementAddr).
	// It does not switch on a management server the configuration disabled.
	ManagementAddr string
	// Components, when set, are registered under their schemes in place of Helix's
	// own (and of helix.kafka.brokers' kafka://): a program embedding Helix, or a
	// test, gives an http:// its own transport or points slack:// at another API URL.
	// One instance serving two schemes (http and https) is given under both. They
	// are started and stopped with the application, like Helix's own.
	Components map[string]component.Component
	// RAGParts, when set, replace Helix's own chunkers, embedders, stores and file
	// source in every pipeline (tests give fakes; see internal/rag/pipeline/pipelinetest).
	RAGParts *pipeline.Parts
	// SpanExporter, when set, switches tracing on and receives every span as it
	// ends, in place of helix.tracing's OTLP exporter (tests pass
	// tracetest.NewInMemoryExporter()); sampling and the service name still come
	// from helix.tracing.
	SpanExporter sdktrace.SpanExporter
}

// App is a built application. Start and Stop are called once each, from one goroutine.
type App struct {
	opts   Options
	cfg    *config.Config
	hc     *engine.Context
	logger *slog.Logger

	bc   *step.BuildContext
	errs config.Errors

	// security holds one entry per declared MCP server with security settings;
	// their live stacks exist from Start to Stop.
	security     []*serverSecurity
	securityByID map[string]*serverSecurity
	// gateways are the gateways of the servers with upstreams:, by server id (gateway.go).
	gateways map[string]*gateway.Gateway
	// auditors are the running auditors of those gateways, by server id: the
	// console shows their own counts (gateway.go, console_mcp.go).
	auditors sync.Map
	// mgmt is the management server (nil when helix.management.enabled is false).
	mgmt  *management.Server
	state atomic.Int32 // stateBuilt … stateStopped, for /readyz

	// Agents (agents.go): the agents: entries, by id, and every runner (inline
	// agent: steps included); catalogue is the one tool catalogue MCP servers serve
	// from and agents call through.
	agents    []*builtAgent
	agentByID map[string]*builtAgent
	runners   []*setup.Runner
	catalogue *tool.Catalogue

	// Pipelines (pipelines.go): the pipelines: entries, in order and by id.
	pipelines    []*pipeline.Pipeline
	pipelineByID map[string]*pipeline.Pipeline

	// cluster is helix.cluster's leader election (cluster.go); nil without it.
	cluster *clusterState

	// listeners are the sockets the app's servers listen on (reload.go): a
	// successor started by Handover shares them.
	listeners *netguard.Generation
	// tracer is helix.tracing's provider and exporter (internal/tracing/export);
	// nil when tracing is off.
	tracer *export.Provider
	// durable is the durable runtime (durable.go); nil when nothing is durable.
	durable *durable.Runtime
	// durableOps operates the durable runs (durable_ops.go); nil when nothing
	// is durable.
	durableOps *durableOps
	// waits resolves the waits of approve:, await:, sleep: … (waits.go).
	waits waitsState
	// console is the web console (console.go); nil when it is off.
	console *consoleState
}

// Build creates the engine context for cfg: components, workflows (trigger, steps,
// error handler), tools (tool://id with input/output schemas and input
// validation), agents (their trigger or agent://id, run by internal/agent/setup) and
// pipelines (pipeline://id, run by internal/rag/pipeline). It
// returns every problem found as config.Errors; on error no App is returned.
func Build(cfg *config.Config, opts Options) (*App, error) {
	if cfg == nil {
		return nil, errors.New("build: no configuration")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// No log record shows a URL's query values or password, or a secret of the
	// configuration (internal/redact).
	logger = slog.New(redact.Handler(logger.Handler()))
	name := cfg.Helix.Name
	if name == "" {
		name = "helix"
	}
	hc := engine.NewContext(name)
	hc.SetLogger(logger)
	// Tracing is set before anything is registered: the MCP servers and the
	// workflows' pipelines look for it when they are built.
	tracer, tracingErr := export.New(cfg.Helix.Tracing, export.Options{DefaultServiceName: name,
		ServiceVersion: opts.Version, Exporter: opts.SpanExporter})
	if tracer != nil {
		hc.SetTracer(tracer.Tracer())
	}
	for scheme, c := range opts.Components {
		hc.AddComponent(scheme, c)
	}
	// Each component module gets its own helix.<scheme> settings (helix.kafka).
	registerErr := registerComponents(hc, cfg.Helix.Modules)

	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	opts.Logger = logger
	a := &App{opts: opts, cfg: cfg, hc: hc, logger: logger, bc: step.NewBuildContext(hc), tracer: tracer}
	if registerErr != nil {
		a.errs = append(a.errs, &config.Error{Path: "helix", Msg: registerErr.Error()})
	}
	if tracingErr != nil {
		a.errs = append(a.errs, &config.Error{Pos: cfg.Helix.Tracing.Pos, Path: "helix.tracing", Msg: tracingErr.Error()})
	}
	a.bc.Starlang = &starlang.Options{MaxMemory: cfg.Helix.StarlangMaxMemory}
	a.bc.TargetAuth = map[string]step.TargetAuthHandler{mcpclient.Scheme: mcpTargetAuth}
	type built struct {
		wf  *engine.Workflow
		pos config.Pos
	}
	var workflows []built
	triggers := map[string]config.Pos{}
	a.prepareAgents()    // agents.go: agent: steps and agent:// targets refer to them
	a.preparePipelines() // pipelines.go: rag-retrieve/rag-ingest steps and pipeline:// targets refer to them
	for _, w := range cfg.Workflows {
		if wf := a.buildWorkflow(w, triggers); wf != nil {
			a.markDurable(wf, w.Durable) // durable.go
			workflows = append(workflows, built{wf, w.Pos})
		}
	}
	for _, t := range cfg.Tools {
		if wf := a.buildTool(t); wf != nil {
			a.markDurable(wf, t.Durable)
			workflows = append(workflows, built{wf, t.Pos})
		}
	}
	a.checkDuplicateBodies() // validate.go
	for i, wf := range a.buildAgentWorkflows(triggers) {
		a.markDurable(wf, a.agents[i].cfg.Durable)
		workflows = append(workflows, built{wf, a.agents[i].cfg.Pos})
	}
	for i, wf := range a.buildPipelineWorkflows() {
		workflows = append(workflows, built{wf, a.pipelines[i].Config().Pos})
	}
	a.errs = append(a.errs, a.bc.Errors()...)
	a.cfg.Warnings = append(a.cfg.Warnings, a.bc.Warnings()...) // e.g. a step key in its former spelling
	// Step errors do not stop the build here: the MCP servers are checked too, so
	// that one run of helix validate reports their problems as well. An app with
	// errors is never returned, so nothing built from a broken step can start.
	for _, b := range workflows {
		if err := hc.AddWorkflow(b.wf); err != nil {
			a.errs = append(a.errs, &config.Error{Pos: b.pos, Msg: err.Error()})
		}
	}
	// One catalogue of every workflow, tool and agent: agents call through it, MCP
	// servers (helix.mcp.servers, mcps:) serve from it (buildMCP in mcp.go).
	a.catalogue = a.buildCatalogue()
	a.resolveAgents(a.catalogue)
	a.buildMCP()
	a.buildCluster()    // cluster.go: singleton triggers wait for leadership
	a.buildDurableOps() // durable_ops.go: before the management server registers its metrics
	a.buildManagement()
	a.consoleWithoutManagement() // console.go
	a.lintWorkflows()            // warnings, validate.go
	a.warnOpenListeners()        // warnings, security.go
	if len(a.errs) > 0 {
		return nil, a.errs.Sorted()
	}
	return a, nil
}

// Validate builds cfg and throws the result away: it reports every problem without
// starting anything.
func Validate(cfg *config.Config) error {
	_, err := Build(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	return err
}

// Load reads files and builds them. It returns the configuration even when there are
// errors (nil only when no file could be read), so callers can show its warnings, and
// the errors of loading and building together, sorted by position.
func Load(opts Options, files ...string) (*App, *config.Config, error) {
	cfg, err := config.Load(files...)
	var errs config.Errors
	if err != nil {
		var ce config.Errors
		if !errors.As(err, &ce) {
			return nil, cfg, err
		}
		errs = append(errs, ce...)
	}
	if cfg == nil {
		return nil, nil, errs.Err()
	}
	a, err := Build(cfg, opts)
	if err != nil {
		errs = append(errs, config.AsErrors(err, config.Pos{}, "")...)
	}
	// A value whose ${env:…} is missing was built from its raw text: its errors
	// would only repeat the missing variable.
	errs = errs.WithoutFollowOns()
	if len(errs) > 0 {
		return nil, cfg, errs.Sorted()
	}
	return a, cfg, nil
}

// Context returns the engine context (for MCP servers, tests and embedding).
func (a *App) Context() *engine.Context { return a.hc }

// Config returns the configuration the app was built from.
func (a *App) Config() *config.Config { return a.cfg }

// Start starts the management server (unless disabled), then components, producers
// and the triggers of every workflow. /readyz reports ready once all of that has
// started. When the management address is taken Start logs a warning and goes on,
// unless helix.management.required is set.
func (a *App) Start(ctx context.Context) error {
	if !a.state.CompareAndSwap(stateBuilt, stateStarting) {
		return errors.New("app: already started")
	}
	if a.listeners == nil {
		a.listeners = netguard.NewGeneration(nil)
	}
	ctx = netguard.WithGeneration(ctx, a.listeners)
	if err := a.openSecurity(); err != nil {
		a.state.Store(stateStopped)
		return err
	}
	// Tracing before anything that makes exchanges, so that none goes untraced.
	if a.tracer != nil {
		if err := a.tracer.Start(ctx); err != nil {
			a.closeSecurity()
			a.state.Store(stateStopped)
			return err
		}
	}
	a.applyReplayBudget()
	// Management first, so that /healthz answers and /readyz says "starting" while
	// the rest comes up.
	if a.mgmt != nil {
		if err := a.mgmt.Start(ctx); err != nil {
			_ = a.stopTracing(ctx)
			a.closeSecurity()
			a.state.Store(stateStopped)
			return err
		}
	}
	if err := a.openDurable(ctx); err != nil { // durable.go
		a.state.Store(stateStopped)
		_ = a.stopManagement(ctx)
		_ = a.stopTracing(ctx)
		a.closeSecurity()
		return err
	}
	if err := a.hc.Start(ctx); err != nil {
		a.stopDurableAt(0)()
		a.state.Store(stateStopped)
		_ = a.stopManagement(ctx)
		_ = a.stopTracing(ctx)
		a.closeSecurity()
		return err
	}
	if err := a.launchDurable(); err != nil {
		a.stopDurableAt(0)()
		_ = a.hc.Stop(ctx)
		a.state.Store(stateStopped)
		_ = a.stopManagement(ctx)
		_ = a.stopTracing(ctx)
		a.closeSecurity()
		return err
	}
	if err := a.startWaits(ctx); err != nil { // waits.go
		a.stopDurableAt(0)()
		a.state.Store(stateStopped)
		_ = a.hc.Stop(ctx)
		_ = a.stopManagement(ctx)
		_ = a.stopTracing(ctx)
		a.closeSecurity()
		return err
	}
	a.startCluster() // cluster.go
	a.startConsole() // console.go
	a.state.Store(stateRunning)
	return nil
}

// defaultShutdownTimeout bounds the drain at Stop when helix.shutdown_timeout is
// not set.
const defaultShutdownTimeout = 30 * time.Second

// ShutdownTimeout is how long Stop lets in-flight exchanges and tool calls finish:
// helix.shutdown_timeout, or defaultShutdownTimeout.
func (a *App) ShutdownTimeout() time.Duration {
	if d := a.cfg.Helix.ShutdownTimeout; d > 0 {
		return d
	}
	return defaultShutdownTimeout
}

// Stop stops triggers, drains in-flight exchanges until ShutdownTimeout (or ctx's
// deadline, if earlier) and stops the rest. The order matters to clients and load
// balancers: /readyz answers 503 "stopping" first; then MCP servers refuse new
// tools/call requests ("server is shutting down") and new sessions (503) while the
// calls already running drain; the management server and the MCP security stacks
// stop last.
func (a *App) Stop(ctx context.Context) error {
	a.state.Store(stateStopping)
	if sc := a.mcpServers(); sc != nil {
		sc.BeginShutdown()
	}
	ctx, cancel := context.WithTimeout(ctx, a.ShutdownTimeout())
	defer cancel()
	drain := a.ShutdownTimeout()
	if dl, ok := ctx.Deadline(); ok {
		drain = time.Until(dl)
	}
	stopDurable := a.stopDurableAt(drain) // durable.go: runs cut off stay pending
	err := a.hc.Stop(ctx)
	err = errors.Join(err, a.stopWaits(ctx)) // waits.go: after the drain, in which links still work
	stopDurable()
	a.stopCluster() // after every trigger stopped: releases the leader lock
	a.stopConsole() // console.go
	if mErr := a.stopManagement(ctx); mErr != nil {
		err = errors.Join(err, mErr)
	}
	if tErr := a.stopTracing(ctx); tErr != nil {
		err = errors.Join(err, tErr)
	}
	a.closeSecurity()
	a.state.Store(stateStopped)
	return err
}

// stopTracing flushes the spans still queued, after every exchange has ended. The
// flush gets a deadline of its own, helix.shutdown_timeout: the drain may have used
// up ctx's, and the spans of the exchanges drained are the ones worth keeping.
func (a *App) stopTracing(ctx context.Context) error {
	if a.tracer == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.ShutdownTimeout())
	defer cancel()
	return a.tracer.Shutdown(sctx)
}

// managementStopGrace bounds the management server's shutdown. It gets its own
// deadline: the drain may have used up ctx's, and the health endpoints answer
// instantly anyway.
const managementStopGrace = 5 * time.Second

func (a *App) stopManagement(ctx context.Context) error {
	if a.mgmt == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), managementStopGrace)
	defer cancel()
	return a.mgmt.Stop(sctx)
}

func registerComponents(hc *engine.Context, settings map[string]any) error {
	// Every component of internal/component/all that needs no wiring, tool:// included.
	err := all.RegisterWith(hc, settings)
	// The MCP client (mcp:// targets) is registered before workflows are built: a
	// target's auth: block attaches its credentials to this component while building.
	hc.AddComponent(mcpclient.Scheme, mcpclient.New())
	// The MCP server component too: workflows with an mcp-server:// trigger (spec §3.2)
	// are checked against the registered schemes while they are built.
	hc.AddComponent(mcpServerScheme, mcpserver.New(hc))
	return err
}

func (a *App) buildWorkflow(w config.WorkflowConfig, triggers map[string]config.Pos) *engine.Workflow {
	bc := a.bc
	bc.Workflow, bc.Trigger, bc.ToolOutput = w.ID, w.From, nil
	wf := &engine.Workflow{
		ID:          w.ID,
		Description: w.Description,
		FromURI:     w.From,
		Kind:        engine.KindWorkflow,
		Source:      w.Pos.String(),
		ShownURI:    w.FromRaw, // MCP clients see the URI without resolved secrets
	}
	if w.From != "" {
		tp := config.KeyPath(w.Path, "trigger")
		if bc.CheckEndpoint(w.FromPos, tp, w.From, true) {
			if uri.HasPlaceholders(w.From) {
				bc.Errorf(w.FromPos, tp, "a trigger URI cannot contain ${…} placeholders other than ${env:NAME}")
			} else if u, err := uri.Parse(w.From); err == nil {
				key := u.Normalized()
				if first, dup := triggers[key]; dup {
					bc.Errorf(w.FromPos, tp, "trigger %s is already used by the workflow at %s", w.From, first).Hint =
						"two workflows cannot consume from the same endpoint; give each its own URI"
				} else {
					triggers[key] = w.FromPos
				}
			}
		}
	}
	a.buildWorkflowSchemas(w, wf) // tools.go: input: and output:, as a tools: entry's
	wf.Processors = step.BuildSteps(bc, w.Steps)
	if w.ErrorHandler != nil {
		wf.ErrorHandler = a.buildErrorHandler(w)
	}
	if oe := w.OnError; oe != nil {
		wf.FailureStatus = engine.FailureStatus{All: oe.Status, ByClass: oe.StatusByClass}
	}
	return wf
}

func (a *App) buildErrorHandler(w config.WorkflowConfig) engine.ErrorHandler {
	eh := w.ErrorHandler
	path := config.KeyPath(w.Path, "error_handler")
	opts := engine.ErrorHandlerOptions{DeadLetterURI: eh.DeadLetterChannel}
	if r := eh.Default; r != nil {
		opts.MaximumRedeliveries = r.MaximumRedeliveries
		opts.RedeliveryDelay = r.RedeliveryDelay
		opts.BackoffMultiplier = r.BackoffMultiplier
		opts.MaximumRedeliveryDelay = r.MaximumRedeliveryDelay
	}
	if err := opts.Validate(); err != nil {
		a.bc.Errorf(eh.Pos, path, "%v", err)
		return nil
	}
	if opts.DeadLetterURI != "" && !a.bc.CheckEndpoint(eh.Pos, config.KeyPath(path, "dead_letter_channel"), opts.DeadLetterURI, false) {
		return nil
	}
	return engine.NewErrorHandler(a.hc, opts)
}
