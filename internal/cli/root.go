// Package cli implements the helix command line: one file per command (cobra).
// Logs go to stderr only: stdout belongs to command output and to the stdio MCP
// transport. Exit codes: 0 ok, 1 runtime failure, 2 bad input or configuration.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/arvenza/helix/internal/redact"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitRuntime = 1
	ExitConfig  = 2
)

// mcpSubcommands are the children of `helix mcp`; the files that implement them
// append their constructor in init().
var mcpSubcommands []func() *cobra.Command

// exitError carries the exit code of a failed command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// configError marks err as bad input (exit 2).
func configError(err error) error { return &exitError{code: ExitConfig, err: err} }

// runtimeError marks err as a runtime failure (exit 1).
func runtimeError(err error) error { return &exitError{code: ExitRuntime, err: err} }

// reported is an error whose details the command already printed; only the exit
// code matters.
type reported struct{ code int }

func (r reported) Error() string { return fmt.Sprintf("exit status %d", r.code) }

// Execute runs the helix command line with args (without the program name) and
// returns the process exit code. It is main's whole body and the entry point of
// tests.
func Execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return ExecuteContext(context.Background(), args, stdin, stdout, stderr)
}

// ExecuteContext is Execute with a context: cancelling it stops `helix run` as a
// signal would.
func ExecuteContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return executeRoot(ctx, newRootCmd(), args, stdin, stdout, stderr)
}

// executeRoot runs root with args and returns the exit code; tests give it a
// root whose commands they changed.
func executeRoot(ctx context.Context, root *cobra.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var r reported
	if errors.As(err, &r) {
		return r.code
	}
	fmt.Fprintln(stderr, "helix:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// Cobra's own errors: unknown command or flag, wrong number of arguments.
	return ExitConfig
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "helix",
		Short: "Helix integration framework: workflows, tools and MCP servers from YAML",
		Long: `Helix moves exchanges between components addressed by URI (direct://, http-server://,
mcp:// …) through workflows declared in YAML, and exposes workflows and tools to AI
assistants as Model Context Protocol tools.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints the line of helix version (version.go).
		Version: strings.TrimSuffix(versionLine(), "\n"),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().String("log-format", "text", "log format: text or json (logs go to stderr)")
	root.PersistentFlags().String("log-level", "", "log level: debug, info, warn or error (default info, or helix.log_level)")
	root.AddCommand(newRunCmd(), newValidateCmd(), newVersionCmd(), newComponentsCmd(), newSchemaCmd(), newRAGCmd())
	root.AddCommand(newTestCmd(), newInitCmd())
	root.AddCommand(newGatewayCmd())          // gateway.go
	root.AddCommand(newRunsCmd(openRunStore)) // runs.go

	mcp := &cobra.Command{
		Use:   "mcp",
		Short: "Work with MCP servers: list, serve, inspect, call, read, prompt",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	for _, newCmd := range mcpSubcommands {
		mcp.AddCommand(newCmd())
	}
	root.AddCommand(mcp)
	return root
}

// logSettings reads --log-format and --log-level.
func logSettings(cmd *cobra.Command) (format, level string) {
	format, _ = cmd.Flags().GetString("log-format")
	level, _ = cmd.Flags().GetString("log-level")
	return format, level
}

// newLogger builds the stderr logger of a command. configLevel (helix.log_level) is
// used when --log-level is not given.
func newLogger(cmd *cobra.Command, configLevel string) (*slog.Logger, error) {
	format, level := logSettings(cmd)
	if level == "" {
		level = configLevel
	}
	var lv slog.Level
	switch strings.ToLower(level) {
	case "", "info":
		lv = slog.LevelInfo
	case "debug":
		lv = slog.LevelDebug
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, configError(fmt.Errorf("unknown log level %q: use debug, info, warn or error", level))
	}
	opts := &slog.HandlerOptions{Level: lv}
	w := cmd.ErrOrStderr()
	switch strings.ToLower(format) {
	case "text", "":
		return slog.New(redact.Handler(slog.NewTextHandler(w, opts))), nil
	case "json":
		return slog.New(redact.Handler(slog.NewJSONHandler(w, opts))), nil
	}
	return nil, configError(fmt.Errorf("unknown log format %q: use text or json", format))
}
