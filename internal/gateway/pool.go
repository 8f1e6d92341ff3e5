package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
)

// Pool hands out the sessions of one upstream by SessionKey
// (internal/gateway/upstream implements it with health checks, failover and
// retries). opts builds the client options of a new session: the relay's
// handlers of the upstream's notifications and requests.
type Pool interface {
	Session(ctx context.Context, key SessionKey, opts func() *sdk.ClientOptions) (*sdk.ClientSession, error)
	// Release closes the session of key, when its downstream session ended.
	Release(key SessionKey)
	Close(ctx context.Context) error
}

// NewPoolFunc makes the Pool of one upstream; httpClient carries the
// upstream's headers and auth: (nil for stdio).
type NewPoolFunc func(u config.UpstreamConfig, httpClient *http.Client) (Pool, error)

// DirectPool is a Pool without health checks or failover: one session per key,
// opened on first use to the upstream's url (or its command), opened again when
// it was closed. pkg/app uses upstream.Pool; DirectPool serves tests and
// builds without it.
func DirectPool(u config.UpstreamConfig, httpClient *http.Client) (Pool, error) {
	if u.Transport != config.UpstreamStdio && u.URL == "" {
		return nil, fmt.Errorf("upstream %s has no url", u.ID)
	}
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	hc := *httpClient
	hc.Transport = &callerHeaders{base: httpClient.Transport}
	return &directPool{cfg: u, http: &hc, sessions: map[SessionKey]*pooled{}}, nil
}

type directPool struct {
	cfg  config.UpstreamConfig
	http *http.Client

	mu       sync.Mutex
	closed   bool
	sessions map[SessionKey]*pooled
}

// pooled is one session, opened once by whoever asked first.
type pooled struct {
	ready chan struct{}
	cs    *sdk.ClientSession
	err   error
	ended atomic.Bool // the session's connection is gone
}

func (p *directPool) Session(ctx context.Context, key SessionKey, opts func() *sdk.ClientOptions) (*sdk.ClientSession, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("the gateway is stopping")
	}
	e := p.sessions[key]
	if e != nil {
		p.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err == nil && !e.ended.Load() {
			return e.cs, nil
		}
		p.mu.Lock()
		if p.sessions[key] == e {
			delete(p.sessions, key)
		}
		p.mu.Unlock()
		return p.Session(ctx, key, opts)
	}
	e = &pooled{ready: make(chan struct{})}
	p.sessions[key] = e
	p.mu.Unlock()
	// The session outlives the call that opened it.
	e.cs, e.err = NewUpstreamClient(&sdk.Implementation{Name: "helix-gateway", Version: "1.0.0"}, opts()).
		Connect(context.WithoutCancel(ctx), p.transport(), nil)
	close(e.ready)
	if e.err != nil {
		p.mu.Lock()
		delete(p.sessions, key)
		p.mu.Unlock()
		return nil, e.err
	}
	go func() { _ = e.cs.Wait(); e.ended.Store(true) }()
	return e.cs, nil
}

func (p *directPool) transport() sdk.Transport {
	switch p.cfg.Transport {
	case config.UpstreamStdio:
		cmd := exec.Command(p.cfg.Command, p.cfg.Args...)
		cmd.Env = os.Environ()
		for k, v := range p.cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		return &sdk.CommandTransport{Command: cmd}
	case config.UpstreamSSE:
		return &sdk.SSEClientTransport{Endpoint: p.cfg.URL, HTTPClient: p.http}
	default:
		return &sdk.StreamableClientTransport{Endpoint: p.cfg.URL, HTTPClient: p.http, MaxRetries: -1}
	}
}

func (p *directPool) Release(key SessionKey) {
	p.mu.Lock()
	e := p.sessions[key]
	delete(p.sessions, key)
	p.mu.Unlock()
	if e != nil {
		go func() {
			<-e.ready
			if e.cs != nil {
				_ = e.cs.Close()
			}
		}()
	}
}

func (p *directPool) Close(context.Context) error {
	p.mu.Lock()
	p.closed = true
	all := p.sessions
	p.sessions = map[SessionKey]*pooled{}
	p.mu.Unlock()
	for _, e := range all {
		<-e.ready
		if e.cs != nil {
			_ = e.cs.Close()
		}
	}
	p.http.CloseIdleConnections()
	return nil
}

// callerHeaders adds UpstreamHeader(ctx) of each request: the caller's
// credentials on a session someone else may have opened.
type callerHeaders struct{ base http.RoundTripper }

func (t *callerHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	h := UpstreamHeader(r.Context())
	if len(h) == 0 {
		return base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, vs := range h {
		r.Header[k] = vs
	}
	return base.RoundTrip(r)
}
