package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/redact"
)

// rejectedByTransport is the go-sdk's marker for an error of the HTTP
// exchange rather than an answer of the server (its code; errors.Is compares
// codes).
var rejectedByTransport = &jsonrpc.Error{Code: -32005}

// MayHaveRunError is a request that failed after it may have reached the
// upstream (the connection dropped after it was written, the upstream died
// while answering): it was not sent again, since the tool may have run.
type MayHaveRunError struct {
	Upstream string
	Err      error
}

func (e *MayHaveRunError) Error() string {
	return fmt.Sprintf("upstream %s: the request may have reached the server before the connection failed, so it was not sent again (it may have run; check before retrying): %s",
		e.Upstream, redact.Text(e.Err.Error()))
}

func (e *MayHaveRunError) Unwrap() error { return e.Err }

// Explain is what the gateway tells the client (gateway.Explained): the same,
// without the transport's words (which may name the upstream's address).
func (e *MayHaveRunError) Explain() string {
	return fmt.Sprintf("upstream %s: the connection failed after the request was sent, so it was not sent again (it may have run; check before retrying)", e.Upstream)
}

// TooLargeError is an answer over the pool's bound (WithMaxResponseBytes).
type TooLargeError struct {
	Upstream string
	Limit    int64
}

func (e *TooLargeError) Error() string   { return e.Explain() }
func (e *TooLargeError) Is(t error) bool { return t == ErrTooLarge }

// Explain is what the gateway tells the client (gateway.Explained).
func (e *TooLargeError) Explain() string {
	return fmt.Sprintf("upstream %s: %v (over %d bytes); it was not relayed", e.Upstream, ErrTooLarge, e.Limit)
}

// Call runs f on the session serving key (opened as Session does), bounded by
// the upstream's timeout. When f fails before its request could have reached
// the upstream (a refused connection, a 503, a session the upstream forgot,
// a stdio process that had exited) the session is given up and f runs again
// on a new one, on the next healthy endpoint: at most once per endpoint and
// once more. A failure after the request may have reached the upstream is a
// *MayHaveRunError and is not retried; an answer of the upstream (a JSON-RPC
// error) is returned as it is.
//
// f must make its requests with the context it is given (that is how the pool
// tells what happened to them).
func (p *Pool) Call(ctx context.Context, key gateway.SessionKey, opts func() *sdk.ClientOptions,
	f func(ctx context.Context, s *sdk.ClientSession) error) error {
	return masked(p.call(ctx, key, opts, f))
}

func (p *Pool) call(ctx context.Context, key gateway.SessionKey, opts func() *sdk.ClientOptions,
	f func(ctx context.Context, s *sdk.ClientSession) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	attempts := len(p.endpoints) + 1
	var last error
	for range attempts {
		e, err := p.acquire(ctx, key, opts)
		if err != nil {
			if last != nil {
				return fmt.Errorf("%w (after: %v)", err, redact.Text(last.Error()))
			}
			return err
		}
		t := &tracker{}
		err = f(withTracker(ctx, t), e.s)
		p.mu.Lock()
		e.inflight--
		p.mu.Unlock()
		if err == nil {
			return nil
		}
		if t.answerTooLarge() {
			// The SDK's connection fails on an answer it cannot read: the
			// session is gone, the call is not sent again.
			p.markLost(key, e.s)
			return &TooLargeError{Upstream: p.cfg.ID, Limit: p.maxResponse}
		}
		if ctx.Err() != nil {
			return err // the caller gave up (or the timeout passed)
		}
		var answer *jsonrpc.Error
		rejected := errors.Is(err, rejectedByTransport)
		if errors.As(err, &answer) && !rejected {
			return err // the upstream answered
		}
		wrote, status := t.state()
		switch {
		case !wrote || status == http.StatusServiceUnavailable:
			// Never sent, or answered 503 without being processed. A transport
			// error or a 503 is the endpoint failing; without either the
			// session's connection had already ended.
			if terr := t.transportErr(); terr != nil {
				p.setHealth(e.endpoint, terr, false)
			} else if status == http.StatusServiceUnavailable {
				p.setHealth(e.endpoint, err, false)
			}
		case errors.Is(err, sdk.ErrSessionMissing):
			// The upstream refused the request for its session id: it forgot
			// the session (restarted); the request was not processed.
		case status >= 400 && status < 500:
			// Refused without being processed (a bad request, no access): the
			// same request would be refused again.
			return err
		default:
			// Written, and no answer that says it did not run (the connection
			// dropped, a 5xx, a process that died).
			if errors.Is(err, sdk.ErrConnectionClosed) {
				p.markLost(key, e.s)
			}
			return &MayHaveRunError{Upstream: p.cfg.ID, Err: err}
		}
		p.markLost(key, e.s)
		last = err
		p.log.Warn("upstream request did not reach the server; retrying on a new session", "upstream", p.cfg.ID, "error", redact.Text(err.Error()))
	}
	return fmt.Errorf("upstream %s: no endpoint took the request after %d attempts: %w", p.cfg.ID, attempts, last)
}

// The gateway shows these errors' explanations to clients.
var (
	_ gateway.Explained = (*MayHaveRunError)(nil)
	_ gateway.Explained = (*TooLargeError)(nil)
	_ gateway.Caller    = (*Pool)(nil)
)
