package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
)

// waitsState is the app's wait service (internal/durable.Waits): it exists from
// Start to Stop when a workflow has an approve: or await: step, or the app has
// durable runs (whose sleep:, until: and timeouts need its timers).
type waitsState struct {
	w           atomic.Pointer[durable.Waits]
	stopSources func(context.Context) error
}

// waitRoutes are the management server's routes of the wait service: the
// callback links. They answer 503 while the service is not running.
func (a *App) waitRoutes() map[string]http.Handler {
	return map[string]http.Handler{durable.CallbackPath: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := a.waits.w.Load()
		if w == nil {
			http.Error(rw, "no run of this application waits for a callback", http.StatusServiceUnavailable)
			return
		}
		w.CallbackHandler().ServeHTTP(rw, r)
	})}
}

// startWaits starts the wait service when something can wait: it attaches it
// to the engine (the steps find it there), starts the consumers of await:
// sources, and arms the timers of the runs parked in the durable store.
func (a *App) startWaits(ctx context.Context) error {
	runs := durable.For(a.hc)
	if !durable.HasWaiting(a.hc) && runs == nil {
		return nil
	}
	cb := a.cfg.Helix.Callbacks
	secret := []byte(cb.Secret)
	if len(secret) == 0 {
		var err error
		if secret, err = callbackKey(a.cfg.Helix.DataDir); err != nil {
			return err
		}
	}
	base := cb.URL
	if base == "" && a.mgmt != nil && a.mgmt.Addr() != "" {
		base = "http://" + a.mgmt.Addr()
	}
	if base == "" {
		a.logger.Warn("waiting steps have no callback links: the management server is off (helix.management.enabled: false or a stdio server); " +
			"approvals come through MCP elicitation or `helix runs approve` only")
	}
	w, err := durable.NewWaits(durable.WaitsOptions{Secret: secret, BaseURL: base, Runs: runs, Logger: a.logger})
	if err != nil {
		return err
	}
	durable.AttachWaits(a.hc, w)
	w.Listen(runs) // timers and inbox for the runs that park from now on
	stop, err := w.StartSources(ctx, a.hc)
	if err != nil {
		durable.AttachWaits(a.hc, nil)
		w.Close()
		return err
	}
	if err := w.Restore(ctx); err != nil {
		_ = stop(ctx)
		durable.AttachWaits(a.hc, nil)
		w.Close()
		return err
	}
	w.Sweep(durable.SweepInterval)
	a.waits.stopSources = stop
	a.waits.w.Store(w)
	return nil
}

// stopWaits stops the consumers of await: sources and the timers; waits held
// in memory end with an error saying the app stops.
func (a *App) stopWaits(ctx context.Context) error {
	w := a.waits.w.Swap(nil)
	if w == nil {
		durable.ForgetWaiting(a.hc)
		return nil
	}
	defer durable.ForgetWaiting(a.hc)
	var err error
	if a.waits.stopSources != nil {
		err = a.waits.stopSources(ctx)
	}
	w.Close()
	durable.AttachWaits(a.hc, nil)
	return err
}

// callbackKeyFile is where the key that signs callback links is kept when
// helix.callbacks.secret does not give one.
const callbackKeyFile = "callbacks.key"

// callbackKey reads the key that signs callback links from the data dir,
// creating it (random, readable by the owner only) at the first start. It must
// outlive restarts: a link sent before one must still work after it.
func callbackKey(dataDir string) ([]byte, error) {
	if dataDir == "" {
		dataDir = config.DefaultDataDir
	}
	path := filepath.Join(dataDir, callbackKeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		key := strings.TrimSpace(string(b))
		if len(key) < 32 {
			return nil, fmt.Errorf("%s: the key that signs callback links is too short (%d characters, want 64 hex digits); delete the file to make a new one (links sent so far stop working)", path, len(key))
		}
		return []byte(key), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading the key that signs callback links: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating helix.data_dir for the key that signs callback links: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	key := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another process made it first
		return callbackKey(dataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the key that signs callback links: %w", err)
	}
	_, werr := f.WriteString(key + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("writing %s: %w", path, werr)
	}
	return []byte(key), nil
}
