package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/pkg/app"
)

func newRunCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run FILE...",
		Short: "Run the workflows, tools and MCP servers of the given files",
		Long: `Run loads and validates the files (all problems are printed, exit status 2), starts
every workflow and MCP server, and runs until SIGINT or SIGTERM. It then stops
accepting work, lets in-flight exchanges finish (up to helix.shutdown_timeout,
30s by default) and exits.
A second signal during the drain exits at once.

SIGHUP reloads the files without downtime, and so does saving one of them with
--watch: when they are valid, a new application starts on the same sockets (no
connection is refused), takes every new connection, and the old one drains
within helix.shutdown_timeout. When they are not, the errors are printed as
helix validate prints them and the running configuration goes on.
See docs/reload.md.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error { return runFiles(cmd, files) },
	}
	cmd.Flags().Bool("watch", false, "reload when one of the files changes (as SIGHUP does)")
	return cmd
}

// runFiles is `helix run`; `helix mcp serve` runs the same way (SIGHUP reloads;
// only run has --watch).
func runFiles(cmd *cobra.Command, files []string) error {
	r := &reloader{cmd: cmd, files: files}
	if err := r.load(); err != nil {
		return err
	}
	raiseFileLimit(r.logger)
	ctx, stopSignals := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	// SIGHUP is caught before Start: from then on it reloads instead of ending
	// the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	a := r.current
	if err := a.Start(ctx); err != nil {
		return runtimeError(fmt.Errorf("start: %w", err))
	}
	setHeapFloor(os.Getenv) // now that start-up is over: see heapfloor.go
	tools, servers := servedTools(a)
	r.logger.Info("helix started", "files", files, "workflows", len(a.Config().Workflows), "tools", tools, "mcp_servers", servers)
	printConsoleURL(cmd, a)

	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		r.serve(loopCtx, hup)
	}()
	if watch, _ := cmd.Flags().GetBool("watch"); watch {
		w, err := watchFiles(files, r.request, r.logger)
		if err != nil {
			stopLoop()
			<-loopDone
			_ = a.Stop(context.Background())
			return runtimeError(fmt.Errorf("--watch: %w", err))
		}
		defer w.Close()
	}
	select {
	case <-ctx.Done():
	case <-a.MCPDone(): // a stdio MCP client closed our stdin: nothing left to serve
		// (an app that serves stdio is never reloaded, so a stays current)
	}
	// Restore default signal handling so that a second Ctrl-C ends the process now.
	stopSignals()
	stopLoop()
	<-loopDone // a reload in progress finishes first: it decides which app is current
	a = r.current
	// Stop bounds the drain itself, with helix.shutdown_timeout.
	r.logger.Info("helix stopping: draining in-flight exchanges", "timeout", a.ShutdownTimeout())
	err := a.Stop(context.Background())
	r.retiring.Wait() // the apps replaced by reloads finish their own drain
	if err != nil {
		return runtimeError(fmt.Errorf("stop: %w", err))
	}
	r.logger.Info("helix stopped")
	return nil
}

// servedTools counts what a running app offers over MCP: its servers, and the
// distinct tools they list to clients (after expose, allowed_tools and
// blocked_tools; a tool two servers serve counts once). The tools: entries of the
// files are not the number: an entry no server exposes is served to nobody.
func servedTools(a *app.App) (tools, servers int) {
	sc := mcpserver.Of(a.Context())
	if sc == nil {
		return 0, 0
	}
	names := map[string]bool{}
	for _, si := range sc.Servers() {
		servers++
		for _, t := range a.ListedTools(si) {
			names[t.Name] = true
		}
	}
	return len(names), servers
}

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard one before any
// listener opens, since the listeners' connection caps derive from it
// (internal/netguard, fdlimit.go), and says how it is shared out.
func raiseFileLimit(log *slog.Logger) {
	limit, err := netguard.RaiseFileLimit()
	if err != nil {
		log.Warn("cannot raise the open-files limit; connection caps follow the lower limit", "error", err,
			"hint", "raise the hard limit (ulimit -Hn, LimitNOFILE= in systemd, --ulimit nofile= in Docker); see docs/scaling.md")
	}
	if limit <= 0 {
		return
	}
	b := netguard.Budget()
	log.Debug("file descriptors", "limit", b.Limit, "listeners_share", b.Listeners,
		"reserve", b.Reserve, "max_connections_default", b.PerListen)
}

// printConsoleURL prints the web console's sign-in link on stderr, outside the
// log (which masks URL query values, the link's token among them) so that a
// user sees it at any log level.
func printConsoleURL(cmd *cobra.Command, a *app.App) {
	if u := a.ConsoleURL(); u != "" {
		_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "console: %s\n", u)
	}
}
