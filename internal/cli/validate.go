package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check configuration files without starting anything",
		Long: `Validate loads the files, builds every workflow and tool, and prints every problem
with its file:line:col. Nothing is started: no port is opened, no file is read by
components. Exit status 2 when there are errors.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			_, cfg, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler)}, files...)
			if cfg != nil {
				printWarnings(cmd.ErrOrStderr(), cfg.Warnings)
			}
			if err != nil {
				return printConfigErrors(cmd.ErrOrStderr(), err)
			}
			summary := plural(len(cfg.Workflows), "workflow") + ", " + plural(len(cfg.Tools), "tool")
			if len(cfg.Agents) > 0 {
				summary += ", " + plural(len(cfg.Agents), "agent")
			}
			if len(cfg.Pipelines) > 0 {
				summary += ", " + plural(len(cfg.Pipelines), "pipeline")
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "ok: %s\n", summary)
			return err
		},
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func printWarnings(w io.Writer, warnings config.Errors) {
	for _, warn := range warnings.Sorted() {
		fmt.Fprintln(w, "warning:", warn)
	}
}

// printConfigErrors prints every configuration error, one per line, and returns the
// exit-2 error. Errors that are not configuration errors (an unreadable file) are
// printed the same way.
func printConfigErrors(w io.Writer, err error) error {
	var errs config.Errors
	if errors.As(err, &errs) {
		for _, e := range errs.Sorted() {
			fmt.Fprintln(w, e)
		}
		fmt.Fprintf(w, "%s\n", plural(len(errs), "error"))
	} else {
		fmt.Fprintln(w, err)
	}
	return reported{code: ExitConfig}
}
