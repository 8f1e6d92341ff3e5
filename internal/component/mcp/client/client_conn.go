package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/report"
)

// Identity the client reports in the MCP initialize handshake (spec: hard-coded
// helix-mcp-client/1.0.0).
const (
	Name    = "helix-mcp-client"
	Version = "1.0.0"
)

// Transports understood by the client (the names servers use too).
const (
	TransportHTTP  = transport.HTTP
	TransportSSE   = transport.SSE
	TransportStdio = transport.Stdio
)

// DefaultCallTimeout bounds one tool call (connecting included) when the URI sets no
// timeout option.
const DefaultCallTimeout = 30 * time.Second

// DefaultMaxResponseBytes bounds one answer of a server when the URI sets no
// maxResponseBytes option: 64 MiB, as for http:// targets.
const DefaultMaxResponseBytes = 64 << 20

// Reconnect backoff: a failed connect may be retried after connectBackoffMin, doubling
// per consecutive failure up to connectBackoffMax. Calls inside the window fail fast with
// the last error instead of hammering a server that is down.
const (
	connectBackoffMin = 100 * time.Millisecond
	connectBackoffMax = 10 * time.Second
)

// stdioTerminateGrace is how long closing a stdio session waits for the subprocess to
// exit after its stdin is closed, before SIGTERM (and then SIGKILL). Well-behaved
// servers exit as soon as stdin closes; the SDK default of 5s would make every Stop
// slow for the ones that do not.
const stdioTerminateGrace = 2 * time.Second

// Config says how to reach one MCP server. The zero values of optional fields
// mean defaults.
type Config struct {
	// Transport is TransportHTTP (Streamable HTTP, the default), TransportSSE or
	// TransportStdio.
	Transport string
	// Endpoint is the URL of the Streamable HTTP or SSE endpoint.
	Endpoint string
	// FindPath, for Streamable HTTP, treats Endpoint (a URL without a path) as the
	// server's base: the first connect tries Endpoint+"/mcp", then Endpoint itself
	// (the root path), and the connection remembers the one that worked. An
	// mcp://host:port/tool URI sets it, so that servers serving only /mcp (such as the
	// reference server-everything) are found as well as those serving only /.
	FindPath bool
	// Command, Args and Env start a stdio server; Env entries (K=V) are added to the
	// current process environment.
	Command string
	Args    []string
	Env     []string
	// Stderr receives the stdio subprocess's stderr; nil means os.Stderr (never stdout:
	// that belongs to Helix's own stdio MCP server when it runs as one).
	Stderr io.Writer
	// Header is sent with every HTTP request (helix mcp call --header).
	Header http.Header
	// Auth authenticates HTTP requests; nil means none.
	Auth *AuthConfig
	// OAuth authorizes Streamable HTTP requests (the go-sdk transport calls it on
	// 401 and 403); nil means the one Auth implies, if any (AuthConfig.OAuthHandler).
	OAuth sdkauth.OAuthHandler
	// Timeout bounds one call, connecting included; 0 means DefaultCallTimeout,
	// negative means no limit beyond the caller's context.
	Timeout time.Duration
	// MaxResponseBytes bounds what the client reads of one answer of the server: the
	// body of an HTTP response, one event of the SSE transport's stream, one message
	// of a stdio server. A larger answer fails the call (ResponseTooLargeError)
	// without being read to its end. 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// ProtocolVersion pins the MCP version offered (one of ProtocolVersions); "" means
	// the SDK's latest, with server/discover, falling back to the initialize handshake
	// with older servers. A pin older than 2026-07-28 goes straight to initialize; a
	// pin of 2026-07-28 or later accepts no fallback (versions.go).
	ProtocolVersion string
	// Logger receives connection events; nil means slog.Default.
	Logger *slog.Logger
	// LogLevel, when set (debug … emergency), asks the server for its log messages
	// at or above that level (logging.go); OnLog receives them as they arrive.
	LogLevel string
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still offered to clients in the window
	OnLog func(*sdk.LoggingMessageParams)
	// Answers says how the server's elicitation and sampling requests are answered
	// (answers.go); the zero value refuses them.
	Answers Answers
}

// Validate reports a config that cannot work.
func (c *Config) Validate() error {
	switch c.Transport {
	case "", TransportHTTP, TransportSSE:
		if c.Endpoint == "" {
			return errors.New("mcp client: an http or sse transport needs an endpoint URL")
		}
		if !strings.HasPrefix(c.Endpoint, "http://") && !strings.HasPrefix(c.Endpoint, "https://") {
			return fmt.Errorf("mcp client: endpoint %q must be an http:// or https:// URL", c.Endpoint)
		}
	case TransportStdio:
		if c.Command == "" {
			return errors.New("mcp client: the stdio transport needs a command to run")
		}
		for _, kv := range c.Env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("mcp client: env entry %q must look like NAME=value", kv)
			}
		}
	default:
		return fmt.Errorf("mcp client: unknown transport %q (use http, sse or stdio)", c.Transport)
	}
	return checkProtocolVersion(c.ProtocolVersion) // versions.go
}

// target names the server in messages.
func (c *Config) target() string {
	if c.Transport == TransportStdio {
		return strings.TrimSpace(c.Command + " " + strings.Join(c.Args, " "))
	}
	return c.Endpoint
}

// Conn is a lazily opened, shared MCP client session with one server.
//
// The session is opened by the first call and shared by every later call; it is safe
// for concurrent use. Beyond the component page's "sticky init error, no reconnect",
// a Conn heals itself:
//
//   - a failed connect is retried by a later call, but not before a backoff that
//     doubles from 100ms to 10s per consecutive failure; a call inside the window fails
//     at once with the last error and the time of the next attempt;
//   - when a call finds the session gone before its request could reach the server
//     (connection refused, the session's connection already closed, stdio subprocess
//     exited), or the server refused the request without processing it (HTTP 404 for
//     a session it no longer knows, another 4xx without a JSON-RPC answer), the
//     session is re-opened once and the call is sent again. A request that may have
//     reached the server (the connection broke after it was written, a 5xx) is never
//     sent again: the call fails, and the next call opens a new session if needed;
//   - a JSON-RPC error answered in a non-2xx body (mcp-go answers an unknown tool
//     with HTTP 400) is the server's answer: a *ToolError, not a transport failure.
//
// Close ends the session; for stdio that terminates the subprocess.
type Conn struct {
	cfg    Config
	client *sdk.Client
	httpc  *http.Client
	httpt  *http.Transport // httpc's base transport, for closing idle connections
	log    *slog.Logger

	mu       sync.Mutex
	sess     *sdk.ClientSession
	found    string        // the endpoint a FindPath connect succeeded with
	dialing  chan struct{} // closed when the connect in progress ends
	lastErr  error
	retryAt  time.Time
	backoff  time.Duration
	closed   bool
	closeCtx context.Context
	cancel   context.CancelFunc
	watchers sync.WaitGroup
	now      func() time.Time

	// progress maps the progress tokens of running calls to their contexts, so that
	// the server's notifications/progress reach the reporter of the exchange that
	// made the call (progress.go).
	progress  sync.Map // string → context.Context
	nextToken atomic.Uint64
	waiting   atomic.Int64 // calls registered in progress

	// calls are the calls in flight that may forward the server's questions
	// (answers.go).
	callsMu sync.Mutex
	calls   map[*inFlight]struct{}

	// streamLimit is the last answer a session-long stream (SSE transport, stdio)
	// refused as larger than MaxResponseBytes; reset when a session opens.
	streamLimit streamLimit

	// schemas is the tool list of a modern session, for Mcp-Param headers and the
	// refusal of tools with invalid header annotations (toolschemas.go).
	schemas toolSchemas
}

// NewConn validates cfg and prepares a connection; nothing is dialled until the
// first call. Auth files (mTLS certificates) are loaded here, so a bad path is reported
// at build time rather than at the first call.
func NewConn(cfg Config) (*Conn, error) {
	if cfg.Transport == "" {
		cfg.Transport = TransportHTTP
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultCallTimeout
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Conn{
		cfg: cfg,
		log: log,
		now: time.Now,
	}
	copts := clientOptions() // tasks.go
	c.applyAnswers(copts)    // answers.go
	c.client = sdk.NewClient(&sdk.Implementation{Name: Name, Version: Version}, copts)
	c.client.AddSendingMiddleware(propagateTrace)       // tracing.go
	c.client.AddReceivingMiddleware(c.refuseUnanswered) // answers.go

	// Tool schemas of 2026-07-28 sessions (toolschemas.go).
	c.client.AddSendingMiddleware(recordToolLists)
	c.schemas.lock = make(chan struct{}, 1)
	if cfg.Transport != TransportStdio {
		hc, ht, err := newHTTPClient(cfg.Header, cfg.Auth)
		if err != nil {
			return nil, fmt.Errorf("mcp client %s: %w", cfg.Endpoint, err)
		}
		hc.Transport = &progressRoundTripper{next: hc.Transport, c: c} // progress.go
		c.httpc, c.httpt = hc, ht
		if c.cfg.OAuth == nil {
			if c.cfg.OAuth, err = cfg.Auth.OAuthHandler(cfg.Endpoint, ht); err != nil {
				return nil, fmt.Errorf("mcp client %s: %w", cfg.Endpoint, err)
			}
		}
		if c.cfg.OAuth != nil && cfg.Transport != TransportHTTP {
			return nil, fmt.Errorf("mcp client %s: OAuth discovery and logins work with the Streamable HTTP transport, not %s", cfg.Endpoint, cfg.Transport)
		}
	}
	c.closeCtx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Config returns the connection's configuration (with defaults applied).
func (c *Conn) Config() Config { return c.cfg }

// CallTool calls tool name with args and returns the server's result. A JSON-RPC error
// answered by the server (unknown tool, invalid arguments; also one in an HTTP 400
// body, as mcp-go answers) is returned as a *ToolError with Protocol set; a result
// with IsError is returned as is, with a nil error. Any other error means the server
// could not be reached, the call timed out (the server was sent
// notifications/cancelled before CallTool returns), or the connection broke after the
// request may have reached the server — such a request is never sent again.
func (c *Conn) CallTool(ctx context.Context, name string, args map[string]any) (*sdk.CallToolResult, error) {
	return c.callTool(ctx, name, args, c.cfg.Timeout)
}

// callTool is CallTool with the caller's timeout: endpoints sharing a connection may
// each have their own.
func (c *Conn) callTool(ctx context.Context, name string, args map[string]any, timeout time.Duration) (res *sdk.CallToolResult, err error) {
	if name == "" {
		return nil, errors.New("no tool name given")
	}
	ctx, span := c.startCallSpan(ctx, name) // tracing.go
	defer func() { endCallSpan(span, res, err) }()
	parent := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if args == nil {
		args = map[string]any{}
	}
	ctx, call, endCall := c.beginCall(ctx) // answers.go
	defer endCall()
	params := &sdk.CallToolParams{Name: name, Arguments: args}
	c.askForLogs(params)            // logging.go
	sendIdempotencyKey(ctx, params) // idempotency.go
	if report.ProgressWanted(parent) {
		// The exchange's caller wants progress: ask the server for its progress and
		// pass it on while the call runs (progress.go).
		token := "helix-" + strconv.FormatUint(c.nextToken.Add(1), 36)
		params.SetProgressToken(token)
		c.progress.Store(token, parent)
		c.waiting.Add(1)
		defer func() {
			c.progress.Delete(token)
			c.waiting.Add(-1)
		}()
	}
	// outcome sends the call and reads its answer: a result, a task, or an error.
	outcome := func(ctx context.Context) (*sdk.CallToolResult, *task, error) {
		var res *sdk.CallToolResult
		tr, err := c.withSession(ctx, false, func(tctx context.Context, s *sdk.ClientSession) error {
			// The listing is not the call: it goes without the call's tracker.
			if err := c.checkTool(ctx, s, name); err != nil { // toolschemas.go
				return err
			}
			trackerFrom(tctx).watchTasksOf(c.offersTasks(s)) // tasks.go
			var err error
			res, err = s.CallTool(tctx, params)
			return err
		})
		if call != nil && call.stopReason() != nil {
			// A forwarded question stopped the call (answers.go): whatever the server
			// answered meanwhile, that is the call's outcome.
			return nil, nil, call.stopReason()
		}
		return c.callOutcome(ctx, parent, name, timeout, tr, res, err)
	}
	var tk *task
	// keep leaves the task running when the call ends because its durable run
	// stopped (a shutdown, a takeover): the resumed run polls it again.
	keep := func() bool { return false }
	if j := durable.JournalFrom(parent); j != nil && c.cfg.Transport == TransportHTTP {
		// A durable run: the call's outcome is journaled (tasks.go), so that a
		// resumed run polls the task the call made instead of calling again.
		res, tk, err = c.journaledCall(ctx, j, name, outcome)
		keep = func() bool { return parent.Err() != nil }
	} else {
		res, tk, err = outcome(ctx)
	}
	if err != nil || tk == nil {
		return res, err
	}
	// The server runs the tool as a task: wait for its end (tasks.go).
	res, err = c.awaitTask(ctx, name, tk, keep)
	var te *ToolError
	switch {
	case err == nil, errors.As(err, &te):
		return res, err
	case ctx.Err() != nil && parent.Err() == nil && timeout > 0:
		return nil, fmt.Errorf("call %s on %s: no answer within %s: %w", name, c.cfg.target(), timeout, err)
	default:
		return nil, fmt.Errorf("call %s on %s: %w", name, c.cfg.target(), err)
	}
}

// callOutcome reads what a tools/call answered: the result, the task the server
// runs the tool as, or the error, explained.
func (c *Conn) callOutcome(ctx, parent context.Context, name string, timeout time.Duration, tr *callTracker,
	res *sdk.CallToolResult, err error) (*sdk.CallToolResult, *task, error) {
	if err == nil {
		if tk := tr.createdTask(); tk != nil {
			return nil, tk, nil
		}
		return res, nil, nil
	}
	if isInvalidTool(err) {
		return nil, nil, err
	}
	if tl := tr.responseTooLarge(); tl != nil {
		return nil, nil, fmt.Errorf("call %s: %w", name, tl)
	}
	if we := tr.serverAnswer(); we != nil {
		return nil, nil, c.explainRefusal(&ToolError{Tool: name, Message: we.Message, Code: we.Code, Protocol: true}) // answers.go
	}
	if we := protocolError(err); we != nil {
		return nil, nil, c.explainRefusal(&ToolError{Tool: name, Message: we.Message, Code: we.Code, Protocol: true})
	}
	if ctx.Err() != nil && parent.Err() == nil && timeout > 0 {
		return nil, nil, fmt.Errorf("call %s on %s: no answer within %s: %w", name, c.cfg.target(), timeout, err)
	}
	return nil, nil, fmt.Errorf("call %s on %s: %w", name, c.cfg.target(), c.streamLimit.explain(err))
}

// ListTools lists the server's tools (all pages).
func (c *Conn) ListTools(ctx context.Context) ([]*sdk.Tool, error) {
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	var tools []*sdk.Tool
	_, err := c.withSession(ctx, true, func(ctx context.Context, s *sdk.ClientSession) error {
		var err error
		tools, err = c.listToolSchemas(ctx, s) // toolschemas.go
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list tools of %s: %w", c.cfg.target(), err)
	}
	return tools, nil
}

// withSession runs f on the shared session with a context carrying a callTracker,
// and returns the tracker of the last attempt. When f fails because the session is
// gone, f runs once more on a new session — but only when that cannot make the
// request run twice: idempotent requests (listing tools), or a request that certainly
// did not reach the server or that the server refused without processing it. A
// request that may have reached the server fails with a maybeRanError; its session is
// dropped when its connection is closed, so the next call opens a new one.
//
// When f fails because ctx ended after its request was written, withSession waits
// (boundedly) for the SDK to deliver notifications/cancelled before returning.
func (c *Conn) withSession(ctx context.Context, idempotent bool, f func(context.Context, *sdk.ClientSession) error) (*callTracker, error) {
	var first error
	for attempt := 0; ; attempt++ {
		s, err := c.session(ctx)
		if err != nil {
			if first != nil {
				return newCallTracker(), fmt.Errorf("%w (reconnect failed: %v)", first, err)
			}
			return newCallTracker(), err
		}
		tr := newCallTracker()
		err = f(withTracker(ctx, tr), s)
		switch {
		case err == nil:
			return tr, nil
		case ctx.Err() != nil:
			if tr.mayHaveReached() {
				tr.awaitCancelNotification(c.closeCtx.Done())
			}
			return tr, err
		case tr.serverAnswer() != nil || !sessionGone(ctx, err):
			return tr, err
		case attempt > 0:
			return tr, err
		case !idempotent && !tr.resendable():
			if errors.Is(err, sdk.ErrConnectionClosed) {
				c.drop(s)
			}
			return tr, &maybeRanError{err: err}
		}
		c.log.Info("mcp session lost before the request was processed; reconnecting", "server", c.cfg.target(), "error", err)
		c.drop(s)
		first = err
	}
}

// maybeRanError is a call that failed after its request may have reached the server:
// it is not sent again, since the tool may have run.
type maybeRanError struct{ err error }

func (e *maybeRanError) Error() string {
	return fmt.Sprintf("the connection failed after the request was sent, so the tool may have run; it was not sent again: %v", e.err)
}

func (e *maybeRanError) Unwrap() error { return e.err }

// session returns the open session, connecting when there is none. Concurrent callers
// share one connect attempt.
func (c *Conn) session(ctx context.Context) (*sdk.ClientSession, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, errClientClosed
		}
		if c.sess != nil {
			s := c.sess
			c.mu.Unlock()
			return s, nil
		}
		if ch := c.dialing; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if now := c.now(); now.Before(c.retryAt) {
			err := &connectError{target: c.cfg.target(), err: c.lastErr,
				retry: fmt.Sprintf("next attempt allowed in %s (at %s)", c.retryAt.Sub(now).Round(time.Millisecond), c.retryAt.Format(time.RFC3339Nano))}
			c.mu.Unlock()
			return nil, err
		}
		ch := make(chan struct{})
		c.dialing = ch
		c.mu.Unlock()

		s, err := c.connect(withoutCall(ctx)) // answers.go
		if err == nil {
			if err = c.checkPinnedEra(s); err != nil { // versions.go
				_ = s.Close()
				s = nil
			}
		}
		if err == nil {
			c.setLoggingLevel(ctx, s) // logging.go
		}

		c.mu.Lock()
		c.dialing = nil
		close(ch)
		switch {
		case err == nil && c.closed:
			c.mu.Unlock()
			_ = s.Close()
			return nil, errClientClosed
		case err == nil:
			c.sess = s
			c.streamLimit.reset()
			c.backoff = 0
			c.lastErr = nil
			c.retryAt = time.Time{}
			c.watch(s)
			c.mu.Unlock()
			return s, nil
		case ctx.Err() != nil:
			// The caller gave up (or timed out): that says nothing about the server, so
			// it does not start a backoff window for the next caller.
			c.mu.Unlock()
			return nil, &connectError{target: c.cfg.target(), err: err}
		default:
			if c.backoff == 0 {
				c.backoff = connectBackoffMin
			} else {
				c.backoff = min(c.backoff*2, connectBackoffMax)
			}
			c.lastErr = err
			c.retryAt = c.now().Add(c.backoff)
			c.mu.Unlock()
			c.log.Warn("mcp connect failed", "server", c.cfg.target(), "error", err, "retry_in", c.backoff)
			return nil, &connectError{target: c.cfg.target(), err: err}
		}
	}
}

// watch forgets s once its connection ends (a stdio server exited, the SSE stream
// closed), so the next call reconnects instead of failing on a dead session.
// Called with c.mu held.
func (c *Conn) watch(s *sdk.ClientSession) {
	c.watchers.Add(1)
	go func() {
		defer c.watchers.Done()
		_ = s.Wait()
		// Release what the dead connection holds (reaps an exited stdio server).
		_ = s.Close()
		c.mu.Lock()
		gone := c.sess == s
		if gone {
			c.sess = nil
		}
		c.mu.Unlock()
		if gone {
			c.log.Debug("mcp session ended", "server", c.cfg.target())
		}
	}()
}

// drop closes s and forgets it if it is still the current session.
func (c *Conn) drop(s *sdk.ClientSession) {
	c.mu.Lock()
	if c.sess == s {
		c.sess = nil
	}
	c.mu.Unlock()
	_ = s.Close()
}

// connect opens a new session. The connect is abandoned when ctx ends or the
// Conn is closed.
func (c *Conn) connect(ctx context.Context) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.closeCtx, cancel)
	defer stop()

	var opts *sdk.ClientSessionOptions
	if c.cfg.ProtocolVersion != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: c.cfg.ProtocolVersion}
	}
	if c.cfg.Transport == TransportHTTP {
		return c.connectHTTP(ctx, opts)
	}
	var t sdk.Transport
	var killGroup func()
	switch c.cfg.Transport {
	case TransportSSE:
		t = &sessionScopedTransport{
			inner:  &sdk.SSEClientTransport{Endpoint: c.cfg.Endpoint, HTTPClient: c.httpc, MaxEventSize: c.sdkEventLimit()},
			parent: c.closeCtx,
		}
	case TransportStdio:
		cmd := exec.Command(c.cfg.Command, c.cfg.Args...)
		if len(c.cfg.Env) > 0 {
			cmd.Env = append(os.Environ(), c.cfg.Env...)
		}
		cmd.Stderr = c.cfg.Stderr
		if cmd.Stderr == nil {
			cmd.Stderr = os.Stderr
		}
		killGroup = ownProcessGroup(cmd)
		t = &stdioTransport{cmd: cmd, killGroup: killGroup, limit: c.cfg.MaxResponseBytes, server: c.cfg.target(), stream: &c.streamLimit}
		t = &progressTransport{Transport: t, c: c} // progress.go
	}
	ct := &callTracker{connect: true}
	s, err := c.client.Connect(withTracker(ctx, ct), t, opts)
	if err != nil {
		err = &statusError{err: err, status: ct.httpStatus()}
		if killGroup != nil {
			// A server that started but failed the handshake must not linger.
			killGroup()
		}
		return nil, err
	}
	c.log.Debug("mcp session opened", "server", c.cfg.target(), "session", s.ID())
	return s, nil
}

// sdkEventLimit is the go-sdk's own bound on one SSE event (16 MiB by default),
// set above MaxResponseBytes: the client's limitedReader, which counts the same
// bytes, refuses first and with an error that names the option.
func (c *Conn) sdkEventLimit() int {
	return int(min(c.cfg.MaxResponseBytes, math.MaxInt32)) + 1<<10
}

// connectHTTP opens a Streamable HTTP session: at the endpoint, or with FindPath at
// the one that worked before, else at /mcp and then at the root path. A path is only
// given up for the next when the server answered (a 404, say); when nothing
// answered (connection refused, timeout) another path would not help.
func (c *Conn) connectHTTP(ctx context.Context, opts *sdk.ClientSessionOptions) (*sdk.ClientSession, error) {
	candidates := []string{c.cfg.Endpoint}
	if c.cfg.FindPath {
		c.mu.Lock()
		found := c.found
		c.mu.Unlock()
		candidates = []string{c.cfg.Endpoint + "/mcp", c.cfg.Endpoint}
		if found == c.cfg.Endpoint {
			candidates[0], candidates[1] = candidates[1], candidates[0]
		}
	}
	var errs pathErrors
	status := 0
	for _, ep := range candidates {
		// Tool calls are request/response: the standalone GET stream for
		// server-initiated messages is not needed, and keeping it would make the SDK
		// retry it in the background whenever the server goes away — unless the
		// Conn answers the server's questions, which a server may send there
		// (answers.go).
		t := &sdk.StreamableClientTransport{Endpoint: ep, HTTPClient: c.httpc, DisableStandaloneSSE: !c.answersQuestions(), MaxEventSize: c.sdkEventLimit(),
			OAuthHandler: c.cfg.OAuth}
		ct := &callTracker{connect: true}
		s, err := c.client.Connect(withTracker(ctx, ct), t, opts)
		if err == nil {
			if c.cfg.FindPath {
				c.mu.Lock()
				c.found = ep
				c.mu.Unlock()
			}
			c.log.Debug("mcp session opened", "server", ep, "session", s.ID())
			return s, nil
		}
		status = ct.httpStatus()
		if de := ct.discoverFailure(); de != nil {
			err = de // the cause, not the refusal of the initialize after it
		}
		errs = append(errs, pathError{endpoint: ep, err: err})
		// Another path only helps when the server answered this one, and not with
		// a momentary failure (a 503 at /mcp does not mean the server is at /).
		if ctx.Err() != nil || status == 0 || momentaryStatus(status) {
			break
		}
	}
	var err error = errs
	if len(errs) == 1 && !c.cfg.FindPath {
		err = errs[0].err
	}
	return nil, &statusError{err: err, status: status}
}

// pathError and pathErrors report the connect attempts of FindPath, one per endpoint.
type pathError struct {
	endpoint string
	err      error
}

type pathErrors []pathError

func (e pathErrors) Error() string {
	var b strings.Builder
	for i, pe := range e {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %v", pe.endpoint, pe.err)
	}
	return b.String()
}

func (e pathErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, pe := range e {
		out[i] = pe.err
	}
	return out
}

// statusError is a failed connect with the HTTP status the server answered (0: no
// answer); see ConnectHTTPStatus.
type statusError struct {
	err    error
	status int
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// ConnectHTTPStatus returns the HTTP status with which the server answered the failed
// connect that err reports (404 when nothing serves MCP at the path, say), or 0 when
// err is not such a failure or no HTTP answer came (connection refused, timeout).
func ConnectHTTPStatus(err error) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.status
	}
	return 0
}

// Endpoint returns the URL the connection talks to: with FindPath, the one that
// worked once a session has been opened.
func (c *Conn) Endpoint() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.found != "" {
		return c.found
	}
	return c.cfg.Endpoint
}

// Close ends the session (terminating a stdio subprocess and waiting for it) and makes
// every later call fail. Safe to call more than once.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	s := c.sess
	c.sess = nil
	c.mu.Unlock()
	c.cancel() // abandons a connect in progress
	if s != nil {
		// A failed goodbye (the server already went away, so the DELETE of the
		// session cannot be delivered; a stdio server exiting non-zero once its stdin
		// closed) leaves nothing to clean up on this side: it is logged, not returned,
		// so that stopping Helix does not report the state of a remote peer as an error.
		if err := s.Close(); err != nil {
			c.log.Debug("mcp session close", "server", c.cfg.target(), "error", err)
		}
	}
	c.watchers.Wait()
	if c.httpt != nil {
		// Kept-alive connections hold goroutines of their own until closed.
		c.httpt.CloseIdleConnections()
	}
	return nil
}

var errClientClosed = errors.New("mcp client is closed")

// connectError is a failure to open a session. Whatever it wraps — even a JSON-RPC
// error answered to initialize — it is about reaching the server, not about a tool.
type connectError struct {
	target string
	err    error
	retry  string // set when the call was refused inside the backoff window
}

func (e *connectError) Error() string {
	if e.retry != "" {
		return fmt.Sprintf("connect to %s failed, %s: %v", e.target, e.retry, e.err)
	}
	return fmt.Sprintf("connect to %s: %v", e.target, e.err)
}

func (e *connectError) Unwrap() error { return e.err }

// ToolError is a tool call that failed on the server: the tool returned a result with
// isError set, or the server answered the call with a JSON-RPC error (Protocol), for an
// unknown tool or invalid arguments say.
type ToolError struct {
	Tool    string
	Message string
	// Code is the JSON-RPC error code when Protocol is set.
	Code     int64
	Protocol bool
}

func (e *ToolError) Error() string {
	if e.Protocol {
		return fmt.Sprintf("mcp tool %s: server error %d: %s", e.Tool, e.Code, e.Message)
	}
	return fmt.Sprintf("mcp tool %s returned an error: %s", e.Tool, e.Message)
}

// rejectedByTransport is the SDK's marker for an HTTP-level refusal (a non-2xx status,
// possibly carrying a JSON-RPC error body): that is about the session or the transport,
// not about the tool.
var rejectedByTransport = &jsonrpc.Error{Code: -32005}

// protocolError returns the JSON-RPC error the server answered a request with, or nil
// when err is about the transport (including HTTP rejections that carry a JSON-RPC body,
// such as a restarted server's "no valid session ID").
func protocolError(err error) *jsonrpc.Error {
	var ce *connectError
	if errors.Is(err, rejectedByTransport) || errors.As(err, &ce) {
		return nil
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we
	}
	return nil
}

// sessionGone reports whether err means the session can no longer be used, so a fresh
// one should be tried: everything except an answer from the server (a JSON-RPC error)
// and the caller's own cancellation or deadline.
func sessionGone(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, errClientClosed) || isInvalidTool(err) || errors.As(err, new(*answerError)) {
		return false
	}
	return protocolError(err) == nil
}

// sessionScopedTransport connects inner with a context that lives as long as the
// connection rather than the connect call. The SDK's SSE transport ties its event
// stream to the context given to Connect; the first call's context (cancelled when that
// call returns) would otherwise end the shared session right after it opened. While
// connecting, the caller's context still aborts the attempt.
type sessionScopedTransport struct {
	inner  sdk.Transport
	parent context.Context // the Conn's lifetime
}

func (t *sessionScopedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	// Keep the caller's values (tracing, auth middleware) without its cancellation.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopParent := context.AfterFunc(t.parent, cancel)
	stopCaller := context.AfterFunc(ctx, cancel)
	conn, err := t.inner.Connect(lctx)
	if !stopCaller() {
		// The caller gave up while connecting: the connection (if any) is cancelled.
		err = errors.Join(ctx.Err(), err)
		if conn != nil {
			_ = conn.Close()
		}
	}
	if err != nil {
		stopParent()
		cancel()
		return nil, err
	}
	return &hookedConn{Connection: conn, onClose: func() { stopParent(); cancel() }}, nil
}

// hookedConn runs onClose once after the connection is closed.
type hookedConn struct {
	sdk.Connection
	once    sync.Once
	onClose func()
}

// Write records what a callTracker in ctx needs (stdio has no HTTP request to trace).
func (c *hookedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	return trackWrite(ctx, msg, func() error { return c.Connection.Write(ctx, msg) })
}

func (c *hookedConn) Close() error {
	err := c.Connection.Close()
	c.once.Do(c.onClose)
	return err
}

// stdioTransport starts a stdio server and speaks newline-delimited JSON-RPC
// over its stdin and stdout, as the go-sdk's CommandTransport does, with two
// additions: each message read is limited to limit bytes (the SDK's own bound is
// fixed at 16 MiB), and once the connection is closed the subprocess's process group
// is killed, so that servers started through a wrapper (npx, a shell script) leave no
// grandchildren behind.
type stdioTransport struct {
	cmd       *exec.Cmd
	killGroup func()
	limit     int64
	server    string // the command line, for errors
	stream    *streamLimit
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	out := &limitedReader{r: stdout, limit: t.limit, delim: lineEnd, server: t.server, stream: t.stream}
	iot := &sdk.IOTransport{
		// Closing stdin, not stdout, ends the session (as with CommandTransport).
		Reader:        readNopCloser{out},
		Writer:        &stdinCloser{WriteCloser: stdin, cmd: t.cmd, grace: stdioTerminateGrace},
		MaxLineLength: -1, // out limits
	}
	conn, err := iot.Connect(ctx)
	if err != nil {
		t.killGroup()
		return nil, err
	}
	return &hookedConn{Connection: conn, onClose: t.killGroup}, nil
}

type readNopCloser struct{ io.Reader }

func (readNopCloser) Close() error { return nil }

// stdinCloser ends a stdio server the way the MCP spec (and the go-sdk's
// CommandTransport) says: close its stdin, wait for it to exit, after grace send
// SIGTERM, after another grace SIGKILL.
type stdinCloser struct {
	io.WriteCloser
	cmd   *exec.Cmd
	grace time.Duration
}

func (s *stdinCloser) Close() error {
	if err := s.WriteCloser.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	wait := func() (error, bool) {
		timer := time.NewTimer(s.grace)
		defer timer.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-timer.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if terminate(s.cmd.Process) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := s.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("the stdio server does not exit, even after SIGKILL")
}
