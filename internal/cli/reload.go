package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// reloader owns the running application of helix run and replaces it when asked
// (SIGHUP, --watch): docs/reload.md. Reloads run one at a time on the serve
// goroutine; requests that arrive during one are coalesced into one more reload,
// which reads the files as they are by then.
type reloader struct {
	cmd   *cobra.Command
	files []string
	// logger is the current configuration's logger (helix.log_level).
	logger *slog.Logger

	// current is the running app: set by load, replaced by reload, both on one
	// goroutine at a time (runFiles before serve starts and after it ended).
	current *app.App
	// pending holds at most one reload request.
	pending chan string
	// retiring counts the replaced apps still draining.
	retiring sync.WaitGroup
	failures int
}

// load reads and builds the files for the first start: errors are printed as
// helix validate prints them, and end the command (exit status 2).
func (r *reloader) load() error {
	a, err := r.build()
	if err != nil {
		return printConfigErrors(r.cmd.ErrOrStderr(), err)
	}
	r.current = a
	r.pending = make(chan string, 1)
	return nil
}

// build loads the files into a new app with the logger its configuration asks
// for. The config may set the log level, but loading needs a logger already: use
// the flags first, then rebuild once helix.log_level is known.
func (r *reloader) build() (*app.App, error) {
	logger, err := newLogger(r.cmd, "")
	if err != nil {
		return nil, err
	}
	opts := app.Options{Logger: logger, Stdin: r.cmd.InOrStdin(), Stdout: r.cmd.OutOrStdout(), Version: currentBuild().Version}
	a, cfg, err := app.Load(opts, r.files...)
	if cfg != nil {
		printWarnings(r.cmd.ErrOrStderr(), cfg.Warnings)
	}
	if err != nil {
		return nil, err
	}
	if cfg.Helix.LogLevel != "" {
		if logger, err = newLogger(r.cmd, cfg.Helix.LogLevel); err != nil {
			return nil, err
		}
		a.Context().SetLogger(logger)
	}
	r.logger = logger
	return a, nil
}

// request asks for a reload; it never blocks. One waiting request is enough:
// the reload reads the files when it runs.
func (r *reloader) request(reason string) {
	select {
	case r.pending <- reason:
	default:
	}
}

// serve reloads on SIGHUP and on requests until ctx ends.
func (r *reloader) serve(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.reload(ctx, "SIGHUP")
		case reason := <-r.pending:
			r.reload(ctx, reason)
		}
	}
}

// reload builds the files and, when they are valid, hands the running app's
// sockets to the new one and retires the old one in the background. Whatever
// fails, the running app goes on and the failure is logged.
func (r *reloader) reload(ctx context.Context, reason string) {
	began := time.Now()
	old, oldLogger := r.current, r.logger
	oldLogger.Info("helix reloading", "reason", reason, "files", r.files)
	next, err := r.build()
	if err != nil {
		r.logger = oldLogger
		// The same lines as helix validate, with their positions.
		_ = printConfigErrors(r.cmd.ErrOrStderr(), err)
		r.failed("the configuration is invalid", errorCount(err))
		return
	}
	if err := old.Handover(ctx, next); err != nil {
		r.logger = oldLogger
		r.failed(err.Error(), 1)
		return
	}
	r.current = next
	cfg := next.Config()
	tools, servers := servedTools(next) // the same counts as the start-up line
	r.logger.Info("helix reloaded", "reason", reason, "workflows", len(cfg.Workflows), "tools", tools,
		"agents", len(cfg.Agents), "pipelines", len(cfg.Pipelines), "mcp_servers", servers,
		"took", time.Since(began).Round(time.Millisecond), "previous_drain_timeout", old.ShutdownTimeout())
	r.retiring.Add(1)
	go func() {
		defer r.retiring.Done()
		if err := old.Retire(context.Background()); err != nil {
			oldLogger.Warn("helix reload: the previous configuration stopped with an error", "error", err)
			return
		}
		oldLogger.Info("helix reload: the previous configuration has drained and stopped")
	}()
}

func (r *reloader) failed(why string, errs int) {
	r.failures++
	r.logger.Error("helix reload failed; the running configuration goes on", "reason", why, "errors", errs,
		"reload_failures", r.failures)
}

func errorCount(err error) int {
	var errs config.Errors
	if errors.As(err, &errs) {
		return len(errs)
	}
	return 1
}
