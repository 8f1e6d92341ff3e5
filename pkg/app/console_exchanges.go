package app

import (
	"context"
	"fmt"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/console/capture"
	"github.com/arvenza/helix/internal/console/exchanges"
	"github.com/arvenza/helix/pkg/exchange"
)

// The Exchanges page (internal/console/exchanges) reads the capture
// (internal/console/capture), which traces every workflow's exchanges, and
// replays through the engine.
func init() {
	registerConsolePart(consolePart{Name: "exchanges", Setup: func(a *App) (consoleSetup, error) {
		cc := a.cfg.Helix.Console.Capture
		c := capture.New(capture.Options{Sample: cc.Sample, MaxBytes: cc.MaxBytes,
			ShowURI: a.hc.ShownURI, Principal: exchangePrincipal})
		page := exchanges.Page(c, consoleReplayer{a: a, c: c})
		return consoleSetup{Tracer: c, Page: page, Stop: c.Close}, nil
	}})
}

// exchangePrincipal is who an exchange runs for, as the MCP server's
// security stack authenticated the call: the API key's or token's name,
// else the principal id.
func exchangePrincipal(ctx context.Context) string {
	if id := security.IdentityFromContext(ctx); id != nil {
		if id.Name != "" {
			return id.Name
		}
		return id.ID
	}
	return security.PrincipalFromContext(ctx)
}

// consoleReplayer re-sends a captured input into its workflow through the
// engine, as a new exchange marked with capture.HeaderReplayOf.
type consoleReplayer struct {
	a *App
	c *capture.Capture
}

func (r consoleReplayer) Replay(ctx context.Context, rec *capture.Exchange, by string) (string, error) {
	raw := r.c.ReplayInput(rec)
	if raw == nil {
		return "", fmt.Errorf("exchange %s cannot be replayed: %s", rec.ID, rec.NotReplayable)
	}
	snap, err := exchange.DecodeSnapshot(raw)
	if err != nil {
		return "", fmt.Errorf("exchange %s: its kept input does not decode: %w", rec.ID, err)
	}
	snap.Exception = nil
	ex := exchange.NewFromSnapshot(snap)
	ex.In().SetHeader(capture.HeaderReplayOf, rec.ID)
	t := &capture.ReplayTicket{Of: rec.ID, By: by}
	err = r.a.hc.Run(capture.WithReplay(ctx, t), rec.Workflow, ex)
	return t.ID, err
}
