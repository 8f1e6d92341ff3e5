// Package mcptools gives an agent the tools of one external MCP server (an agent's
// `tools:` entry of type mcp, spec §4.7 and §4.8) as tool.Tool values: each tool the
// server lists becomes a tool whose Invoke calls the server.
//
// Discovery follows the spec's table: a stdio server is spawned and asked for its
// tools when the agent starts ([Server.Start]); an HTTP or SSE server, which runs on
// its own and may not be up yet, is asked on the first [Server.Tools] call, and asked
// again by later calls until it answers.
package mcptools

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"sync"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/tool"
)

// Options configure one MCP server's tools.
type Options struct {
	// Name names the server in errors and logs, e.g. "MCP server secure-tools
	// (http://mcp.internal:3100)". Empty: "MCP server (<endpoint or command>)".
	Name string
	// Conn says how to reach the server: transport, endpoint or command/args/env,
	// auth, timeout, logger.
	Conn mcpclient.Config
	// Include and Exclude are path.Match patterns on tool names: a tool is kept when
	// it matches some Include pattern (or Include is empty) and no Exclude pattern.
	Include, Exclude []string
}

// Server is the tools of one MCP server. Safe for concurrent use.
type Server struct {
	name     string
	opts     Options
	log      *slog.Logger
	redact   *redactor
	discover chan struct{} // a one-slot semaphore: one discovery at a time, waiting callers honour ctx

	mu      sync.Mutex
	conn    *mcpclient.Conn
	stopped bool
	tools   []*tool.Tool // nil until discovered
	set     *tool.Set    // tools as a Set, made once per discovery
}

// New checks opts (patterns, connection config, auth files) and prepares the
// connection; nothing is dialled or spawned.
func New(opts Options) (*Server, error) {
	if opts.Conn.Transport == "" {
		opts.Conn.Transport = mcpclient.TransportHTTP
	}
	r := newRedactor(opts.Conn)
	name := opts.Name
	if name == "" {
		name = "MCP server (" + r.target() + ")"
	}
	for _, p := range append(append([]string(nil), opts.Include...), opts.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("%s: tool name pattern %q: %v (patterns use path.Match syntax: *, ?, [a-z])", name, p, err)
		}
	}
	conn, err := mcpclient.NewConn(opts.Conn)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", name, r.text(err.Error()))
	}
	log := opts.Conn.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Server{name: name, opts: opts, log: log, redact: r, discover: make(chan struct{}, 1), conn: conn}, nil
}

// Name is how the server is named in errors.
func (s *Server) Name() string { return s.name }

// Start makes the server usable after New or Stop. For stdio it spawns the
// subprocess and discovers its tools now (spec §4.8: discovery on subprocess start),
// failing when that fails; for HTTP and SSE it does nothing, discovery waits for the
// first Tools call.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		conn, err := mcpclient.NewConn(s.opts.Conn)
		if err != nil {
			s.mu.Unlock()
			return fmt.Errorf("%s: %s", s.name, s.redact.text(err.Error()))
		}
		s.conn, s.stopped = conn, false
	}
	s.mu.Unlock()
	if s.opts.Conn.Transport != mcpclient.TransportStdio {
		return nil
	}
	_, err := s.Tools(ctx)
	return err
}

// Stop closes the session; for stdio it terminates the subprocess and waits for it.
// Tools and calls fail after Stop until the next Start.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	conn := s.conn
	s.stopped = true
	s.tools, s.set = nil, nil
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		_ = conn.Close()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: stop: %w", s.name, ctx.Err())
	}
}

// Tools returns the server's tools, filtered by Include and Exclude. They are
// discovered by the first call (or by Start, for stdio) and kept; a failed discovery
// is an error naming the server, and the next call tries again. The slice is shared:
// do not modify it.
func (s *Server) Tools(ctx context.Context) ([]*tool.Tool, error) {
	set, err := s.ToolSet(ctx)
	if err != nil {
		return nil, err
	}
	return set.Tools(), nil
}

// ToolSet returns the tools of Tools as a tool.Set, the same Set while they stay the
// same: a Server is an agent.ToolSource by itself.
func (s *Server) ToolSet(ctx context.Context) (*tool.Set, error) {
	if set, err := s.cached(); set != nil || err != nil {
		return set, err
	}
	select {
	case s.discover <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: discover tools: %w", s.name, context.Cause(ctx))
	}
	defer func() { <-s.discover }()
	// Another caller may have discovered them while this one waited.
	if set, err := s.cached(); set != nil || err != nil {
		return set, err
	}
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	listed, err := conn.ListTools(ctx)
	if err != nil {
		return nil, &redactedError{msg: fmt.Sprintf("%s: discover tools: %s", s.name, s.redact.text(err.Error())), err: err}
	}
	tools := s.build(listed)
	set, err := tool.NewSet(tools)
	if err != nil {
		// build keeps only compiled tools with unique names, so this is a bug here.
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.conn != conn {
		return nil, fmt.Errorf("%s: stopped while discovering its tools", s.name)
	}
	s.tools, s.set = tools, set
	return set, nil
}

// cached returns the discovered set, or an error when the server is stopped, or
// neither when discovery is needed.
func (s *Server) cached() (*tool.Set, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, fmt.Errorf("%s is stopped", s.name)
	}
	return s.set, nil
}

// connection returns the current connection (a new one after Stop and Start).
func (s *Server) connection() *mcpclient.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// selected reports whether the patterns keep the tool name.
func (s *Server) selected(name string) bool {
	match := func(patterns []string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
		return false
	}
	return (len(s.opts.Include) == 0 || match(s.opts.Include)) && !match(s.opts.Exclude)
}

// redactedError is an error whose text has the connection's secrets removed; the
// error it wraps stays reachable for errors.Is (a deadline, a cancellation).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
