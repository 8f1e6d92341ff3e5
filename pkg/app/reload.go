package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/pkg/uri"
)

// Reload without downtime (docs/reload.md): the running app a and its
// successor next live side by side for a moment. next starts on the sockets a
// listens on (netguard.Listen hands them over), a's servers then accept nothing
// more and their connections close one by one as their requests end (Retire),
// and a stops as it would at shutdown.

// drainIdleGrace is how long a connection of a retiring app may stay idle before
// it is closed. An HTTP/1.1 client may be writing its next request onto an idle
// connection at any moment, and a request lost that way (a POST) is not retried;
// waiting a little makes that unlikely, while the busy connections are handed
// over at their next answer ("Connection: close").
const drainIdleGrace = time.Second

// ErrReloadRefused is returned by Handover when the apps cannot be swapped in
// one process: the reason is in the error.
var ErrReloadRefused = errors.New("reload refused")

// Handover starts next in a's place: next's servers listen on the sockets a
// holds for the same addresses (no connection is refused meanwhile; new
// addresses are bound, and a socket only a used closes when a stops). When next
// has started completely, new connections go to it; until then a serves them.
// When next cannot start, what it started is stopped and a runs on untouched.
// a must be running, next built and not started. After a successful Handover,
// call a.Retire.
//
// An app that serves MCP over stdio cannot be handed over (the stream belongs to
// one client and one session): Handover returns ErrReloadRefused then.
func (a *App) Handover(ctx context.Context, next *App) error {
	if a.state.Load() != stateRunning {
		return fmt.Errorf("%w: the running application is not running", ErrReloadRefused)
	}
	for _, x := range []*App{a, next} {
		if id := x.stdioServer(); id != "" {
			return fmt.Errorf("%w: MCP server %s serves stdio, whose stream cannot be handed over to a new configuration; restart Helix instead", ErrReloadRefused, id)
		}
		// Two applications on one durable store would both take up the runs
		// in flight (the new one recovers them while the old one runs them).
		if x.anyDurable() {
			return fmt.Errorf("%w: durable workflows run in this configuration, and two applications cannot share their store; restart Helix instead (pending runs go on after the restart)", ErrReloadRefused)
		}
	}
	next.listeners = netguard.NewGeneration(a.listeners)
	next.adoptConsole(a) // console.go: a reload signs nobody out of the console
	if err := next.Start(ctx); err != nil {
		return err
	}
	next.listeners.Activate()
	return nil
}

// Retire stops an app whose successor took over (Handover): its connections are
// closed as their requests end (a connection idle for drainIdleGrace is closed),
// then it stops as at shutdown: in-flight exchanges finish, triggers that are not
// listeners (timers, pollers, Kafka consumers, leadership) stop. Both phases
// together take at most helix.shutdown_timeout (or ctx's deadline, if earlier).
func (a *App) Retire(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.ShutdownTimeout())
	defer cancel()
	var drainErr error
	if a.listeners != nil {
		if err := a.listeners.Drain(ctx, drainIdleGrace); err != nil {
			drainErr = fmt.Errorf("drain: %w", err)
		}
	}
	return errors.Join(drainErr, a.Stop(ctx))
}

// stdioServer is the id of an MCP server of a that speaks stdio, or "": a
// declared one, or an mcp-server:// trigger (which the component only knows
// once it runs).
func (a *App) stdioServer() string {
	if sc := a.mcpServers(); sc != nil {
		for _, s := range sc.Servers() {
			if s.Transport == mcpserver.TransportStdio {
				return s.ID
			}
		}
	}
	for _, w := range a.cfg.Workflows {
		if u, err := uri.Parse(w.From); err == nil && u.Scheme == mcpServerScheme &&
			mcpserver.URITransport(u) == mcpserver.TransportStdio {
			return w.From
		}
	}
	return ""
}
