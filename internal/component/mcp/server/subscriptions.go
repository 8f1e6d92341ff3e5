package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultResourcePollInterval is how often the stamps of subscribed file
// resources are compared (Options.ResourcePollInterval).
const DefaultResourcePollInterval = time.Second

// subscriptions tracks which sessions subscribed to which URIs, so that file
// resources are polled only while somebody listens. The go-sdk keeps its own table
// (per session, used by Server.ResourceUpdated to address notifications); this one
// only drives polling. A session that goes away without unsubscribing leaves its
// entry until the server stops: polling one more file is cheap.
type subscriptions struct {
	set      *resourceSet
	allowed  func(context.Context, string) error
	interval time.Duration
	logger   *slog.Logger
	notify   func(uri string)

	mu      sync.Mutex
	subs    map[string]map[*sdk.ServerSession]bool
	stamps  map[string]string // last stamp seen per polled URI
	stop    chan struct{}     // closed by close; nil until the poller starts
	done    chan struct{}
	stopped bool
}

func newSubscriptions(set *resourceSet, allowed func(context.Context, string) error, interval time.Duration, logger *slog.Logger) *subscriptions {
	if interval <= 0 {
		interval = DefaultResourcePollInterval
	}
	return &subscriptions{set: set, allowed: allowed, interval: interval, logger: logger,
		subs: map[string]map[*sdk.ServerSession]bool{}, stamps: map[string]string{}}
}

// subscribe accepts subscriptions to the resources the server offers to the
// caller, and refuses others as not found.
func (s *subscriptions) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	r, _, ok := s.set.lookup(uri)
	if !ok && (uri == WorkflowsResourceURI || uri == RoutesResourceURI) {
		return nil // never updated, but there is no harm in listening
	}
	if !ok || (s.allowed != nil && s.allowed(withCallerToken(ctx, req), r.Name) != nil) {
		return sdk.ResourceNotFoundError(uri)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[uri] == nil {
		s.subs[uri] = map[*sdk.ServerSession]bool{}
	}
	s.subs[uri][req.Session] = true
	if r.Stamp != nil {
		if _, seen := s.stamps[uri]; !seen {
			s.stamps[uri] = r.Stamp()
		}
		s.startPollerLocked()
	}
	return nil
}

func (s *subscriptions) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	uri := req.Params.URI
	delete(s.subs[uri], req.Session)
	if len(s.subs[uri]) == 0 {
		delete(s.subs, uri)
		delete(s.stamps, uri)
	}
	return nil
}

func (s *subscriptions) startPollerLocked() {
	if s.stop != nil || s.stopped {
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.poll(s.stop, s.done)
}

// poll compares the stamps of the subscribed resources that have one and
// notifies their subscribers of changes.
func (s *subscriptions) poll(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, uri := range s.changed() {
			s.notify(uri)
		}
	}
}

// changed returns the subscribed URIs whose stamp differs from the last one seen.
func (s *subscriptions) changed() []string {
	s.mu.Lock()
	uris := make([]string, 0, len(s.stamps))
	for uri := range s.stamps {
		uris = append(uris, uri)
	}
	s.mu.Unlock()
	var out []string
	for _, uri := range uris {
		r, _, ok := s.set.lookup(uri)
		if !ok || r.Stamp == nil {
			continue
		}
		stamp := r.Stamp() // outside the lock: it may touch the file system
		s.mu.Lock()
		if old, still := s.stamps[uri]; still && old != stamp {
			s.stamps[uri] = stamp
			out = append(out, uri)
		}
		s.mu.Unlock()
	}
	return out
}

// close stops the poller and waits for it.
func (s *subscriptions) close() {
	s.mu.Lock()
	s.stopped = true
	stop, done := s.stop, s.done
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// resourceUpdated tells the subscribers of uri on this server that it changed.
func (s *mcpServer) resourceUpdated(ctx context.Context, uri string) {
	s.mu.Lock()
	srv := s.sdk
	s.mu.Unlock()
	if srv == nil {
		return
	}
	if err := srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		s.opts.Logger.Warn("mcp resource update notification failed", "id", s.opts.ID, "uri", uri, "error", err)
	}
}

// ResourceUpdated sends notifications/resources/updated for uri to the sessions
// of every running server that subscribed to it (the `resource-updated` step and
// file watching call it). It returns at once when nobody listens.
func (c *Component) ResourceUpdated(ctx context.Context, uri string) {
	c.mu.Lock()
	all := make([]*mcpServer, 0, len(c.running))
	for _, s := range c.running {
		all = append(all, s)
	}
	c.mu.Unlock()
	for _, s := range all {
		s.resourceUpdated(ctx, uri)
	}
}

// hidePrimitives filters resources/list, resources/templates/list and
// prompts/list through allowed (by name), as hideDisallowedTools does for tools.
func hidePrimitives(allowed func(context.Context, string) error) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			ok := func(name string) bool { return allowed(withCallerToken(ctx, req), name) == nil }
			switch r := res.(type) {
			case *sdk.ListResourcesResult:
				kept := r.Resources[:0:0]
				for _, x := range r.Resources {
					// helix://workflows filters its own content.
					if x.URI == WorkflowsResourceURI || x.URI == RoutesResourceURI || ok(x.Name) {
						kept = append(kept, x)
					}
				}
				r.Resources = kept
			case *sdk.ListResourceTemplatesResult:
				kept := r.ResourceTemplates[:0:0]
				for _, x := range r.ResourceTemplates {
					if ok(x.Name) {
						kept = append(kept, x)
					}
				}
				r.ResourceTemplates = kept
			case *sdk.ListPromptsResult:
				kept := r.Prompts[:0:0]
				for _, x := range r.Prompts {
					if ok(x.Name) {
						kept = append(kept, x)
					}
				}
				r.Prompts = kept
			}
			return res, nil
		}
	}
}

// primitiveOptions sets the go-sdk options the server's resources and prompts
// need: subscriptions when it has resources, completions when it has prompts or
// templates. Nothing adds or removes resources or prompts while a server runs
// (they come from the configuration), so listChanged stays false for both.
func (s *mcpServer) primitiveOptions(o *sdk.ServerOptions, set *resourceSet, subs *subscriptions) {
	if len(set.all) > 0 {
		o.Capabilities.Resources.Subscribe = true
		o.SubscribeHandler = subs.subscribe
		o.UnsubscribeHandler = subs.unsubscribe
	}
	if len(s.opts.Prompts) > 0 || len(set.templates) > 0 {
		o.Capabilities.Completions = &sdk.CompletionCapabilities{}
		o.CompletionHandler = completionHandler(s.opts.Prompts, set, s.opts.ToolAllowed, s.opts.Logger)
	}
}
