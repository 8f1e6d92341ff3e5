package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/redact"
)

// Status is what the pool knows of its upstream.
type Status struct {
	Upstream  string
	Transport string
	Sessions  string // the sharing mode
	// Healthy is true while some endpoint is healthy; Endpoint is the one new
	// sessions go to (for stdio: the command line).
	Healthy  bool
	Endpoint string
	// LastError is the last failure seen (health check or connect); "" when none.
	LastError string
	// OpenSessions are the sessions open now; Processes the stdio processes
	// running (one per session).
	OpenSessions int
	Processes    int
	// ProtocolVersion is what the last session opened negotiated.
	ProtocolVersion string
	Endpoints       []EndpointStatus
}

// EndpointStatus is the health of one address of the upstream.
type EndpointStatus struct {
	URL       string
	Healthy   bool
	LastError string
	// Checked is when its health was last seen (a check or a connect); zero
	// while it never was, so its health is unknown.
	Checked time.Time
}

// Status reports the upstream's health and sessions. URLs are shown with their
// passwords and query values masked.
func (p *Pool) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{Upstream: p.cfg.ID, Transport: p.transport, Sessions: p.mode, ProtocolVersion: p.protocol, LastError: p.lastErr}
	for _, ep := range p.endpoints {
		st.Endpoints = append(st.Endpoints, EndpointStatus{URL: ep.shown, Healthy: ep.healthy, LastError: ep.lastErr, Checked: ep.checked})
		if ep.healthy && !st.Healthy {
			st.Healthy, st.Endpoint = true, ep.shown
		}
		if !ep.healthy && ep.lastErr != "" {
			st.LastError = ep.lastErr
		}
	}
	for _, e := range p.sessions {
		if e.s != nil && !e.dead {
			st.OpenSessions++
		}
	}
	if p.transport == TransportStdio {
		st.Processes = st.OpenSessions
		st.Endpoint = p.endpoints[0].url
	}
	return st
}

// setHealth records the outcome of a health check, a connect or a request at
// ep (err nil: healthy) and logs a change. When a health check (probe) finds
// an http or sse endpoint unhealthy, the sessions open there are given up:
// their next use reopens them on a healthy endpoint (and tells onReopen). A
// failed connect or request only orders the endpoints for new sessions: one
// connection reset (an upstream at its connection limit) must not cut off
// the calls other clients have in flight on their sessions there, which fail
// or succeed on their own.
func (p *Pool) setHealth(ep *endpoint, err error, probe bool) {
	if ep == nil {
		return
	}
	p.mu.Lock()
	was := ep.healthy
	ep.healthy = err == nil
	ep.lastErr = ""
	ep.checked = time.Now()
	if err != nil {
		ep.lastErr = redact.Text(err.Error())
		p.lastErr = ep.lastErr
	}
	lastErr := ep.lastErr
	var lost []*sdk.ClientSession
	if probe && was && err != nil && p.transport != TransportStdio {
		for _, e := range p.sessions {
			if e.endpoint == ep && e.s != nil && !e.dead {
				e.dead = true
				lost = append(lost, e.s)
			}
		}
	}
	p.mu.Unlock()
	for _, s := range lost {
		go func() { _ = s.Close() }()
	}
	switch {
	case was && err != nil:
		p.log.Warn("upstream unhealthy", "upstream", p.cfg.ID, "endpoint", ep.shown, "error", lastErr, "sessions_moved", len(lost))
	case !was && err == nil:
		p.log.Info("upstream healthy", "upstream", p.cfg.ID, "endpoint", ep.shown)
	}
}

// maintain runs the health checks every interval (none when interval < 0)
// and closes idle sessions, until the pool closes.
func (p *Pool) maintain(interval time.Duration) {
	defer p.wg.Done()
	var health, idle <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		health = t.C
	}
	if p.idleTimeout > 0 {
		t := time.NewTicker(max(p.idleTimeout/4, 10*time.Millisecond))
		defer t.Stop()
		idle = t.C
	}
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-health:
			p.checkHealth()
		case <-idle:
			p.closeIdle()
		}
	}
}

// healthTimeout is Health.Timeout or its default.
func (p *Pool) healthTimeout() time.Duration {
	if p.cfg.Health.Timeout > 0 {
		return p.cfg.Health.Timeout
	}
	return DefaultHealthTimeout
}

// checkHealth pings every endpoint (http, sse: on a session of the check's
// own) or every open stdio session.
func (p *Pool) checkHealth() {
	if p.transport == TransportStdio {
		p.checkStdio()
		return
	}
	for _, ep := range p.endpoints {
		if p.ctx.Err() != nil {
			return
		}
		p.setHealth(ep, p.probe(ep), true)
	}
}

// probe checks ep: a ping on the health check's own session, opened when
// needed. A server of the 2026-07-28 era has no ping and no session: opening
// one (its server/discover) is the check, every time. An upstream that
// answers the connect with a refusal of its own (401 for a gateway without
// credentials of its own, say) is up: that is all a health check asks.
func (p *Pool) probe(ep *endpoint) error {
	ctx, cancel := context.WithTimeout(p.ctx, p.healthTimeout())
	defer cancel()
	if ep.probe == nil {
		c := sdk.NewClient(&sdk.Implementation{Name: client.Name, Version: client.Version}, nil)
		t := &tracker{}
		var s *sdk.ClientSession
		var err error
		if p.transport == TransportSSE {
			s, err = c.Connect(withTracker(ctx, t), client.NewSessionScopedTransport(&sdk.SSEClientTransport{Endpoint: ep.url, HTTPClient: p.httpc}, p.ctx), nil)
		} else {
			s, err = c.Connect(withTracker(ctx, t), &sdk.StreamableClientTransport{Endpoint: ep.url, HTTPClient: p.httpc,
				OAuthHandler: ep.oauth, DisableStandaloneSSE: true}, nil)
		}
		if err != nil {
			if _, status := t.state(); status >= 400 && status < 500 && ctx.Err() == nil {
				return nil
			}
			return noAnswer(err, p.healthTimeout())
		}
		if s.InitializeResult().ProtocolVersion >= protocol20260728 {
			_ = s.Close()
			return nil
		}
		ep.probe = s
	}
	err := ep.probe.Ping(ctx, nil)
	if err != nil {
		_ = ep.probe.Close()
		ep.probe = nil
	}
	return noAnswer(err, p.healthTimeout())
}

// protocol20260728 is the first protocol version without sessions and ping.
const protocol20260728 = "2026-07-28"

// noAnswer says what a deadline error of a health check means.
func noAnswer(err error, timeout time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s (health timeout)", timeout)
	}
	return err
}

// checkStdio pings the open stdio sessions; one that does not answer is given
// up (its process killed) and reopened on next use.
func (p *Pool) checkStdio() {
	p.mu.Lock()
	var open []*entry
	for _, e := range p.sessions {
		if e.s != nil && !e.dead {
			open = append(open, e)
		}
	}
	p.mu.Unlock()
	var failed error
	for _, e := range open {
		ctx, cancel := context.WithTimeout(p.ctx, p.healthTimeout())
		err := alive(ctx, e.s)
		cancel()
		if err != nil && p.ctx.Err() == nil {
			err = noAnswer(err, p.healthTimeout())
			failed = err
			p.log.Warn("upstream process does not answer ping; it is restarted on next use", "upstream", p.cfg.ID, "error", redact.Text(err.Error()))
			p.markLost(e.key, e.s)
		}
	}
	if len(open) > 0 && p.ctx.Err() == nil {
		p.setHealth(p.endpoints[0], failed, true)
	}
}

// forgetAfter is how many idle timeouts a lost session's entry is kept for a
// reopen that tells onReopen.
const forgetAfter = 6

// closeIdle closes the per-client and per-principal sessions unused for the
// idle timeout. Their entries stay, marked lost: a later use reopens them and
// tells onReopen, as for any lost session.
func (p *Pool) closeIdle() {
	now := time.Now()
	cutoff := now.Add(-p.idleTimeout)
	forget := now.Add(-forgetAfter * p.idleTimeout)
	var idle []*sdk.ClientSession
	p.mu.Lock()
	for k, e := range p.sessions {
		if e.dead && e.inflight == 0 && e.lastUsed.Before(forget) {
			// Lost long ago and not used since (a downstream session that ended
			// without Release): forgotten, so that entries do not pile up.
			delete(p.sessions, k)
			continue
		}
		if k == (gateway.SessionKey{}) || e.s == nil || e.dead || e.inflight > 0 || e.lastUsed.After(cutoff) {
			continue
		}
		e.dead = true
		idle = append(idle, e.s)
	}
	p.mu.Unlock()
	for _, s := range idle {
		_ = s.Close()
	}
	if len(idle) > 0 {
		p.log.Debug("upstream idle sessions closed", "upstream", p.cfg.ID, "count", len(idle))
	}
}

// alive checks an open session: ping for the legacy protocol; a session of
// the 2026-07-28 era (no ping) lists tools instead, the cheapest request
// every server of that era answers, and any answer (an error too) counts.
func alive(ctx context.Context, s *sdk.ClientSession) error {
	if s.InitializeResult().ProtocolVersion < protocol20260728 {
		return s.Ping(ctx, nil)
	}
	_, err := s.ListTools(ctx, nil)
	var answer *jsonrpc.Error
	if errors.As(err, &answer) && !errors.Is(err, rejectedByTransport) {
		return nil
	}
	return err
}
