package cli

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/arvenza/helix/pkg/app"
)

func newRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "run FILE...",
		Short: "Run the workflows, tools and MCP servers of the given files",
		Long: `Run loads and validates the files (all problems are printed, exit status 2), starts
every workflow and MCP server, and runs until SIGINT or SIGTERM. It then stops
accepting work, lets in-flight exchanges finish (up to helix.shutdown_timeout,
30s by default) and exits.
A second signal during the drain exits at once.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error { return runFiles(cmd, files) },
	}
}

// runFiles is `helix run`; `helix mcp serve` runs the same way.
func runFiles(cmd *cobra.Command, files []string) error {
	// The config may set the log level, but loading needs a logger already: use the
	// flags first, then rebuild once helix.log_level is known.
	logger, err := newLogger(cmd, "")
	if err != nil {
		return err
	}
	opts := app.Options{Logger: logger, Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Version: Version}
	a, cfg, err := app.Load(opts, files...)
	if cfg != nil {
		printWarnings(cmd.ErrOrStderr(), cfg.Warnings)
	}
	if err != nil {
		return printConfigErrors(cmd.ErrOrStderr(), err)
	}
	if cfg.Helix.LogLevel != "" {
		if logger, err = newLogger(cmd, cfg.Helix.LogLevel); err != nil {
			return err
		}
		a.Context().SetLogger(logger)
	}

	ctx, stopSignals := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	if err := a.Start(ctx); err != nil {
		return runtimeError(fmt.Errorf("start: %w", err))
	}
	logger.Info("helix started", "files", files, "workflows", len(cfg.Workflows), "tools", len(cfg.Tools))
	select {
	case <-ctx.Done():
	case <-a.MCPDone(): // a stdio MCP client closed our stdin: nothing left to serve
	}
	// Restore default signal handling so that a second Ctrl-C ends the process now.
	stopSignals()
	// Stop bounds the drain itself, with helix.shutdown_timeout.
	logger.Info("helix stopping: draining in-flight exchanges", "timeout", a.ShutdownTimeout())
	if err := a.Stop(context.Background()); err != nil {
		return runtimeError(fmt.Errorf("stop: %w", err))
	}
	logger.Info("helix stopped")
	return nil
}
