package server

import (
	"context"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/internal/report"
)

// callReporter turns the progress and log reports of one tool call (package
// report) into notifications for the client that made the call:
// notifications/progress when the call carried _meta.progressToken, and
// notifications/message, which the go-sdk session sends only at or above the level
// the client set with logging/setLevel (or, in the 2026-07-28 protocol, asked for in
// the request's _meta).
//
// Progress is sent only when it advances (MCP: the progress value must increase
// with each notification), so branches reporting out of order cannot make it go
// back. Reports are serialized, so notifications leave in the order they were
// accepted; after the call has answered, reports are dropped.
type callReporter struct {
	ss     *sdk.ServerSession
	ctx    context.Context // the call's handler context: it relates notifications to the request
	token  any             // progress token; nil when the client asked for no progress
	logger string          // default logger name: the tool's name

	mu   sync.Mutex
	last float64
	sent bool
	done bool
}

var _ report.Reporter = (*callReporter)(nil)

// withCallReporter returns ctx carrying the reporter of req, a tools/call of tool
// on the SDK path, and the function that ends its reporting (to be called once the
// call has answered). Its notifications are related to the request, so that Helix's
// Streamable HTTP transport sends them on the call's POST (transport.RelatedTo).
func withCallReporter(ctx context.Context, req *sdk.CallToolRequest, tool string) (context.Context, func()) {
	if req == nil || req.Session == nil {
		return ctx, func() {}
	}
	r := &callReporter{ss: req.Session, ctx: ctx, logger: tool}
	if req.Extra != nil {
		r.ctx = transport.RelatedTo(ctx, req.Extra)
	}
	if req.Params != nil {
		r.token = req.Params.GetProgressToken()
	}
	return report.WithReporter(ctx, r), r.finish
}

// WantsProgress reports whether the client asked for progress (report.ProgressWanted).
func (r *callReporter) WantsProgress() bool { return r.token != nil }

// Progress sends notifications/progress when the call has a progress token and
// current is beyond what was last sent.
func (r *callReporter) Progress(_ context.Context, current, total float64, message string) {
	if r.token == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done || (r.sent && current <= r.last) {
		return
	}
	r.last, r.sent = current, true
	_ = r.ss.NotifyProgress(r.ctx, &sdk.ProgressNotificationParams{ProgressToken: r.token, Progress: current, Total: total, Message: message})
}

// Log sends notifications/message; the session drops it below the client's level.
func (r *callReporter) Log(_ context.Context, level report.Level, logger string, data any) {
	if logger == "" {
		logger = r.logger
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still offered to clients in the window
	_ = r.ss.Log(r.ctx, &sdk.LoggingMessageParams{Level: sdk.LoggingLevel(level.String()), Logger: logger, Data: data})
}

// finish ends the call's reporting: later reports (from a branch abandoned at a
// timeout) are dropped, so that no notification follows the result.
func (r *callReporter) finish() {
	r.mu.Lock()
	r.done = true
	r.mu.Unlock()
}
