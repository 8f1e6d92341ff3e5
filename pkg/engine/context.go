// Package engine runs workflows: it holds the component registry of one Helix
// context, builds endpoints once per normalised URI, starts producers before consumers,
// and on Stop drains in-flight exchanges before stopping producers.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arvenza/helix/internal/lazyctx"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Workflow states reported by [Context.WorkflowState] and the helix://workflows resource.
const (
	StateStopped = "Stopped"
	StateStarted = "Started"
	// StateStandby is a workflow whose singleton trigger waits for this replica to
	// become the cluster's leader (see [Context.DeferSingletons]).
	StateStandby = "Standby"
)

// defaultDrainTimeout bounds how long Stop waits for in-flight exchanges when the
// context passed to Stop has no deadline.
const defaultDrainTimeout = 30 * time.Second

// Context is one Helix application: components, workflows and their lifecycle.
// Methods are safe for concurrent use. A Context is started once and stopped once.
type Context struct {
	name   string
	logger *slog.Logger

	// mu is read-locked on the paths every exchange takes (its workflow, a
	// component, the logger, a started producer): under many concurrent calls an
	// exclusive lock there made them queue behind each other (a convoy once one
	// waiter had waited long enough for the mutex to hand it over in turn).
	mu         sync.RWMutex
	components map[string]component.Component
	schemes    []string // registration order, for starting component lifecycles
	workflows  []*Workflow
	byID       map[string]*runtimeWorkflow
	endpoints  map[string]component.Endpoint
	producers  map[string]component.Producer
	dynamic    dynamicProducers
	started    bool
	stopped    bool
	// producersClosed is set when Stop, after draining, takes the producers to stop
	// them; from then on no producer (permanent or dynamic) may be created or kept.
	producersClosed bool
	// producerByRaw finds a producer by the URI text it was asked for, so that a
	// target's every exchange does not parse and normalise its URI again; bounded by
	// maxProducersByRaw (past it, lookups parse as before).
	producerByRaw map[string]component.Producer

	startedComponents []component.Lifecycle
	startedServices   []component.Service // step services, started before consumers
	consumers         []component.Consumer
	singletons        singletonTriggers // singleton.go

	inflight  activity
	counters  map[string]*workflowCounters
	bg        activity
	runCtx    context.Context
	cancelRun context.CancelFunc
	tracer    Tracer                       // tracer.go; nil: no tracing
	nested    atomic.Pointer[NestedTracer] // nested.go: the tracer, when it traces nested steps
	override  ProducerOverride             // override.go; nil: every target goes to its component
	durable   DurableRunner                // durable.go; nil: durable workflows run like any other

	failureLimit failureLogLimit // failurelog.go
}

type runtimeWorkflow struct {
	wf       *Workflow
	pipeline Processor
	state    string
	counters *workflowCounters
	id       any // wf.ID boxed once, for the context of every run
	// failures logs the exchanges that fail in this workflow (failurelog.go).
	failures *failureLog
}

// idValue is wf.ID as an interface value, without boxing it anew on every run.
func (rw *runtimeWorkflow) idValue() any {
	if id, _ := rw.id.(string); id == rw.wf.ID {
		return rw.id
	}
	return rw.wf.ID
}

// NewContext creates an empty context named name with direct:// (built into the
// engine) registered. Every other component is added with AddComponent, or all at
// once with internal/component/all's Register.
func NewContext(name string) *Context {
	c := &Context{
		name:       name,
		logger:     slog.Default(),
		components: map[string]component.Component{},
		byID:       map[string]*runtimeWorkflow{},
		endpoints:  map[string]component.Endpoint{},
		producers:  map[string]component.Producer{},
	}
	c.runCtx, c.cancelRun = context.WithCancel(context.Background())
	c.AddComponent("direct", NewDirect())
	return c
}

// Name returns the context's name.
func (c *Context) Name() string { return c.name }

// Logger returns the context's logger (slog.Default unless set).
func (c *Context) Logger() *slog.Logger {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.logger
}

// SetLogger replaces the logger; call it before Start.
func (c *Context) SetLogger(l *slog.Logger) {
	c.mu.Lock()
	c.logger = l
	c.mu.Unlock()
}

// AddComponent registers comp under scheme, replacing any earlier one.
func (c *Context) AddComponent(scheme string, comp component.Component) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.components[scheme]; !ok {
		c.schemes = append(c.schemes, scheme)
	}
	c.components[scheme] = comp
}

// Component returns the component registered under scheme.
func (c *Context) Component(scheme string) (component.Component, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	comp, ok := c.components[scheme]
	return comp, ok
}

// Schemes lists the registered schemes, sorted.
func (c *Context) Schemes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]string(nil), c.schemes...)
	sort.Strings(out)
	return out
}

// AddWorkflow registers w. IDs must be unique and non-empty. Workflows added after
// Start are not started.
func (c *Context) AddWorkflow(w *Workflow) error {
	if w == nil || w.ID == "" {
		return errors.New("add workflow: a workflow needs an id")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.byID[w.ID]; dup {
		return fmt.Errorf("add workflow %q: a workflow with this id already exists", w.ID)
	}
	if w.Kind == "" {
		w.Kind = KindWorkflow
	}
	procs := append([]Processor(nil), w.Processors...)
	for _, to := range w.ToURIs {
		procs = append(procs, NewTarget(c, to))
	}
	c.workflows = append(c.workflows, w)
	rw := &runtimeWorkflow{wf: w, pipeline: BuildPipeline(procs, w.Interceptors, w.ErrorHandler), state: StateStopped,
		counters: c.countersLocked(w.ID), id: w.ID, failures: newFailureLog(w.ID, c.failureLimitLocked(), c.Logger)}
	setPipelineTracer(rw.pipeline, c.tracer)
	c.byID[w.ID] = rw
	return nil
}

// Workflows returns the workflows in the order they were added.
func (c *Context) Workflows() []*Workflow {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Workflow(nil), c.workflows...)
}

// Workflow returns the workflow with the given id.
func (c *Context) Workflow(id string) (*Workflow, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rw, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	return rw.wf, true
}

// WorkflowState returns "Started" or "Stopped".
func (c *Context) WorkflowState(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rw, ok := c.byID[id]; ok {
		return rw.state
	}
	return StateStopped
}

// Run sends ex through the workflow's whole pipeline (interceptors and error handler
// included) and counts it as in-flight so Stop waits for it. Panics are recovered into
// errors. The returned error is also left on ex as its exception.
func (c *Context) Run(ctx context.Context, workflowID string, ex *exchange.Exchange) error {
	rw, err := c.workflowFor(workflowID, ex)
	if err != nil {
		return err
	}
	return c.runPipeline(ctx, rw, ex)
}

// workflowFor returns the workflow a run of ex names; an unknown id is an error,
// also left on ex as its exception.
func (c *Context) workflowFor(workflowID string, ex *exchange.Exchange) (*runtimeWorkflow, error) {
	c.mu.RLock()
	rw, ok := c.byID[workflowID]
	c.mu.RUnlock()
	if !ok {
		err := fmt.Errorf("no workflow with id %q", workflowID)
		ex.SetException(err)
		return nil, err
	}
	return rw, nil
}

// RunUntilStop is [Context.Run] whose run also ends when Stop gives up draining
// (when RunContext ends), not only when ctx does: for callers whose ctx is not
// derived from RunContext (MCP tool calls).
func (c *Context) RunUntilStop(ctx context.Context, workflowID string, ex *exchange.Exchange) error {
	rw, err := c.workflowFor(workflowID, ex)
	if err != nil {
		return err
	}
	outermost := WorkflowID(ctx) == ""
	rc := lazyctx.WithCancelValue(ctx, workflowIDKey{}, rw.idValue())
	defer rc.Cancel()
	// Registered with the in-flight count rather than with context.AfterFunc on
	// the run context: no allocations, and no lock shared by every run.
	slot := c.inflight.addCancellable(rc)
	defer c.inflight.doneCancellable(slot)
	return c.process(rc, rw, ex, false, outermost, nil)
}

// triggered is the processor rw's trigger consumer delivers to: CheckTriggered,
// then the pipeline.
func (c *Context) triggered(rw *runtimeWorkflow) Processor {
	check := rw.wf.CheckTriggered
	return ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
		c.inflight.Add(1)
		defer c.inflight.Done()
		return c.process(ctx, rw, ex, true, WorkflowID(ctx) == "", check)
	})
}

// safeCheck runs a CheckTriggered; a panic in it fails the exchange like a step's.
func safeCheck(check func(*exchange.Exchange) error, ex *exchange.Exchange) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return check(ex)
}

func (c *Context) runPipeline(ctx context.Context, rw *runtimeWorkflow, ex *exchange.Exchange) error {
	c.inflight.Add(1)
	defer c.inflight.Done()
	return c.process(ctx, rw, ex, true, WorkflowID(ctx) == "", nil)
}

// process runs ex through rw's pipeline, after check (the workflow's CheckTriggered
// for an exchange its trigger delivered; nil otherwise), so that a refused input is
// counted, logged and given its on_error status like any other failure. The caller
// counts it as in-flight. withID:
// ctx does not carry the workflow id yet (withWorkflowID). outermost: no other
// workflow's pipeline is running the exchange (it is not a direct:// call), so a
// failure is logged here, once, with the path of the steps it went through.
func (c *Context) process(ctx context.Context, rw *runtimeWorkflow, ex *exchange.Exchange, withID, outermost bool,
	check func(*exchange.Exchange) error) (err error) {
	if rw.wf.Durable {
		if d := c.durableFor(ctx, rw, outermost); d != nil {
			// The durable run is counted, traced and logged where it runs. A
			// refused input fails here like any other (check refuses it again).
			if check == nil || safeCheck(check, ex) == nil {
				if withID {
					ctx = withWorkflowID(ctx, rw.idValue())
				}
				return d.RunDurable(ctx, rw.wf.ID, ex)
			}
		}
	}
	if c.tracer != nil {
		// Deferred before the recovery below, so it runs after it and sees a panic's error.
		var end func(error)
		ctx, end = c.tracer.StartExchange(ctx, string(rw.wf.Kind), rw.wf.ID, rw.wf.FromURI, ex)
		defer func() { end(err) }()
	}
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r}
			ex.SetException(err)
		}
		// An interrupt (interrupt.go) stopped the exchange on purpose: it is not
		// counted, logged or mapped to a status as a failure.
		failed := err != nil && !IsInterrupt(err)
		if failed && !rw.wf.FailureStatus.IsZero() {
			err = rw.wf.FailureStatus.apply(err)
			ex.SetException(err)
		}
		// Counted here, once per exchange, whichever trigger or caller started it.
		wc := rw.counters
		wc.nanos.Add(int64(time.Since(start)))
		wc.exchanges.Add(1)
		if failed {
			wc.failed.Add(1)
		}
		// A panic is logged where it happens: the workflow that called this one may
		// recover from the failure (an agent whose tool failed), and a panic must
		// not go unseen.
		if failed && (outermost || IsPanic(err)) {
			rw.failures.failed(ex, err)
		}
	}()
	if ex.FromWorkflow() == "" {
		ex.SetFromWorkflow(rw.wf.ID)
	}
	if withID {
		ctx = withWorkflowID(ctx, rw.idValue())
	}
	if check != nil {
		if err := safeCheck(check, ex); err != nil {
			ex.SetException(err)
			return err
		}
	}
	return rw.pipeline.Process(ctx, ex)
}

// Endpoint returns the endpoint for rawURI, building it once per normalised URI.
func (c *Context) Endpoint(rawURI string) (component.Endpoint, error) {
	u, err := uri.Parse(rawURI)
	if err != nil {
		return nil, err
	}
	key := u.Normalized()
	c.mu.Lock()
	if ep, ok := c.endpoints[key]; ok {
		c.mu.Unlock()
		return ep, nil
	}
	comp, ok := c.components[u.Scheme]
	if !ok {
		schemes := c.schemesLocked()
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: no component for scheme %q (registered: %v)", rawURI, u.Scheme, schemes)
	}
	c.mu.Unlock()
	// Built without the lock: CreateEndpoint may call back into the Context (see the
	// contract in pkg/component). Two callers racing for one URI may both build; the
	// first endpoint stored wins and the other is dropped, which the contract allows
	// because CreateEndpoint acquires nothing.
	ep, err := comp.CreateEndpoint(u)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", component.RedactURI(comp, rawURI), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if existing, ok := c.endpoints[key]; ok {
		return existing, nil
	}
	c.endpoints[key] = ep
	return ep, nil
}

// ShownURI returns rawURI with the values of its component's secret options hidden
// ([component.RedactURI]), for logs: a URI may hold a credential resolved from
// ${env:…} (slack://ops?token=…). A URI of no registered component is returned as
// it is. Safe for concurrent use.
func (c *Context) ShownURI(rawURI string) string {
	u, err := uri.Parse(rawURI)
	if err != nil {
		return rawURI
	}
	comp, ok := c.Component(u.Scheme)
	if !ok {
		return rawURI
	}
	return component.RedactURI(comp, rawURI)
}

func (c *Context) schemesLocked() []string {
	out := append([]string(nil), c.schemes...)
	sort.Strings(out)
	return out
}

// Producer returns the started producer for rawURI, creating and starting it on first
// use; it is stopped by Stop. Safe for concurrent use.
func (c *Context) Producer(ctx context.Context, rawURI string) (component.Producer, error) {
	c.mu.RLock()
	if p, ok := c.producerByRaw[rawURI]; ok {
		c.mu.RUnlock()
		return p, nil
	}
	c.mu.RUnlock()
	u, err := uri.Parse(rawURI)
	if err != nil {
		return nil, err
	}
	key := u.Normalized()
	c.mu.RLock()
	if p, ok := c.producers[key]; ok {
		c.mu.RUnlock()
		c.rememberProducer(rawURI, key)
		return p, nil
	}
	if c.producersClosed {
		c.mu.RUnlock()
		return nil, fmt.Errorf("%s: the context is stopped", c.ShownURI(rawURI))
	}
	c.mu.RUnlock()
	p, err := c.newProducer(u, rawURI)
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		return nil, fmt.Errorf("start producer %s: %w", c.ShownURI(rawURI), err)
	}
	c.mu.Lock()
	if c.producersClosed {
		// Stop collected the producers while this one was starting: nobody else
		// would ever stop it.
		c.mu.Unlock()
		if err := p.Stop(ctx); err != nil {
			c.Logger().Warn("stop producer created during Stop", "uri", c.ShownURI(rawURI), "error", err)
		}
		return nil, fmt.Errorf("%s: the context is stopped", c.ShownURI(rawURI))
	}
	if existing, ok := c.producers[key]; ok {
		c.mu.Unlock()
		_ = p.Stop(ctx)
		return existing, nil
	}
	c.producers[key] = p
	c.rememberLocked(rawURI, p)
	c.mu.Unlock()
	return p, nil
}

// maxProducersByRaw bounds producerByRaw: callers may spell one URI many ways.
const maxProducersByRaw = 1024

// rememberProducer records the producer of the normalised key for the text rawURI,
// unless Stop took the producers meanwhile.
func (c *Context) rememberProducer(rawURI, key string) {
	c.mu.Lock()
	if p, ok := c.producers[key]; ok && !c.producersClosed {
		c.rememberLocked(rawURI, p)
	}
	c.mu.Unlock()
}

func (c *Context) rememberLocked(rawURI string, p component.Producer) {
	if c.producerByRaw == nil {
		c.producerByRaw = map[string]component.Producer{}
	}
	if len(c.producerByRaw) < maxProducersByRaw {
		c.producerByRaw[rawURI] = p
	}
}

// newProducer builds (without starting) the producer of a static target URI: the
// override's (override.go), else its endpoint's.
func (c *Context) newProducer(u *uri.URI, rawURI string) (component.Producer, error) {
	if p, ok := c.overriddenProducer(u); ok {
		return p, nil
	}
	ep, err := c.Endpoint(rawURI)
	if err != nil {
		return nil, err
	}
	p, err := ep.CreateProducer()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.ShownURI(rawURI), err)
	}
	return p, nil
}

// Send delivers ex to rawURI through its producer.
func (c *Context) Send(ctx context.Context, rawURI string, ex *exchange.Exchange) error {
	p, err := c.Producer(ctx, rawURI)
	if err != nil {
		return err
	}
	return p.Process(ctx, ex)
}

// Go runs f in a goroutine owned by the context: Stop waits for it (up to the drain
// deadline) and f's context is cancelled when draining gives up. Used by wiretap and
// other asynchronous steps.
func (c *Context) Go(f func(ctx context.Context)) {
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		f(c.runCtx)
	}()
}

// RunContext is cancelled when Stop gives up draining; consumers that create
// exchanges on their own (timers) derive their contexts from it.
func (c *Context) RunContext() context.Context { return c.runCtx }

// abandonRuns ends RunContext and the runs of RunUntilStop.
func (c *Context) abandonRuns() {
	c.cancelRun()
	c.inflight.abandon()
}

// Services is implemented by composite steps (choice, multicast …) so that the engine
// can find every step with a lifecycle.
type Services interface {
	Children() []Processor
}

// Start starts component lifecycles, then step services (producers of static targets),
// then the consumers of every workflow with a trigger. If anything fails, what was
// started is stopped and the error returned.
func (c *Context) Start(ctx context.Context) (err error) {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("context already started")
	}
	c.started = true
	schemes := append([]string(nil), c.schemes...)
	comps := make([]component.Component, len(schemes))
	for i, s := range schemes {
		comps[i] = c.components[s]
	}
	wfs := append([]*Workflow(nil), c.workflows...)
	c.mu.Unlock()

	defer func() {
		if err != nil {
			_ = c.stop(context.Background(), time.Second)
		}
	}()
	for i, comp := range comps {
		if lc, ok := comp.(component.Lifecycle); ok {
			if err := lc.Start(ctx); err != nil {
				return fmt.Errorf("start component %s: %w", schemes[i], err)
			}
			c.mu.Lock()
			c.startedComponents = append(c.startedComponents, lc)
			c.mu.Unlock()
		}
	}
	for _, w := range wfs {
		c.mu.Lock()
		rw := c.byID[w.ID]
		c.mu.Unlock()
		for _, svc := range collectServices(rw.pipeline) {
			if err := svc.Start(ctx); err != nil {
				return fmt.Errorf("workflow %s: %w", w.ID, err)
			}
			c.mu.Lock()
			c.startedServices = append(c.startedServices, svc)
			c.mu.Unlock()
		}
	}
	for _, w := range wfs {
		if w.FromURI == "" {
			continue
		}
		if c.deferred(w) { // singleton.go: started by StartSingletons on the leader
			continue
		}
		if err := c.startConsumer(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

func (c *Context) startConsumer(ctx context.Context, w *Workflow) error {
	c.mu.Lock()
	rw := c.byID[w.ID]
	c.mu.Unlock()
	ep, err := c.Endpoint(w.FromURI)
	if err != nil {
		return fmt.Errorf("workflow %s: trigger %w", w.ID, err)
	}
	cons, err := ep.CreateConsumer(c.triggered(rw))
	if err != nil {
		return fmt.Errorf("workflow %s: trigger %s: %w", w.ID, c.ShownURI(w.FromURI), err)
	}
	if err := cons.Start(ctx); err != nil {
		return fmt.Errorf("workflow %s: start trigger %s: %w", w.ID, c.ShownURI(w.FromURI), err)
	}
	c.mu.Lock()
	c.consumers = append(c.consumers, cons)
	rw.state = StateStarted
	c.mu.Unlock()
	c.Logger().Debug("workflow started", "workflow", w.ID, "trigger", w.FromURI)
	return nil
}

// collectServices walks a processor tree for steps with a lifecycle.
func collectServices(p Processor) []component.Service {
	var out []component.Service
	var walk func(p Processor)
	walk = func(p Processor) {
		if s, ok := p.(component.Service); ok {
			out = append(out, s)
		}
		if cs, ok := p.(Services); ok {
			for _, ch := range cs.Children() {
				walk(ch)
			}
		}
	}
	walk(p)
	return out
}

// Stop stops consumers (no new exchanges), waits for in-flight exchanges and
// background work until ctx's deadline (or defaultDrainTimeout), cancels what is left,
// then stops step services, producers and components. Errors are joined.
func (c *Context) Stop(ctx context.Context) error {
	timeout := defaultDrainTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	return c.stop(ctx, timeout)
}

func (c *Context) stop(ctx context.Context, drain time.Duration) error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	consumers := append(c.consumers, c.takeSingletonsLocked()...)
	c.consumers = nil
	for _, rw := range c.byID {
		rw.state = StateStopped
	}
	c.mu.Unlock()

	var errs []error
	for i := len(consumers) - 1; i >= 0; i-- {
		if err := consumers[i].Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	done := make(chan struct{})
	go func() {
		c.inflight.Wait()
		c.bg.Wait()
		close(done)
	}()
	timer := time.NewTimer(max(drain, 0))
	select {
	case <-done:
		timer.Stop()
	case <-timer.C:
		c.Logger().Warn("stop: drain deadline passed; cancelling in-flight exchanges", "context", c.name)
		c.abandonRuns()
		select {
		case <-done:
		case <-time.After(time.Second):
			errs = append(errs, errors.New("stop: in-flight exchanges did not finish after cancellation"))
		}
	}
	c.abandonRuns()
	c.flushFailureLogs()

	c.mu.Lock()
	services := c.startedServices
	c.startedServices = nil
	producers := c.producers
	c.producers = map[string]component.Producer{}
	c.producerByRaw = nil
	c.producersClosed = true
	comps := c.startedComponents
	c.startedComponents = nil
	c.mu.Unlock()
	for i := len(services) - 1; i >= 0; i-- {
		if err := services[i].Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.stopDynamic(ctx)...)
	for _, p := range producers {
		if err := p.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for i := len(comps) - 1; i >= 0; i-- {
		if err := comps[i].Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
