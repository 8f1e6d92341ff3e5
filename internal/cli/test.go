package cli

import (
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/arvenza/helix/internal/workflowtest"
	"github.com/arvenza/helix/pkg/app"
)

func newTestCmd() *cobra.Command {
	var (
		timeout time.Duration
		filter  string
	)
	cmd := &cobra.Command{
		Use:   "test FILE...",
		Short: "Run the unit tests of workflows (the tests: lists of the files)",
		Long: `Test loads the files like helix run (and, for NAME.yaml, NAME_test.yaml beside it),
then runs every case of their tests: lists: the case's input goes through its workflow
with the real steps, the targets its mocks name answer with canned replies, and the
reply is compared with expect:. Nothing listens or polls: only direct://, tool:// and
agent:// triggers are started, so that workflows can call each other.

One line per case (PASS or FAIL, the case's file:line:col and name), the reasons under
a failure, and a summary. Exit status 0 when every case passes, 1 when one fails, 2 when
a file is invalid. See docs/testing.md.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			var re *regexp.Regexp
			if filter != "" {
				var err error
				if re, err = regexp.Compile(filter); err != nil {
					return configError(fmt.Errorf("--run: %w", err))
				}
			}
			if timeout < 0 {
				return configError(fmt.Errorf("--timeout cannot be negative"))
			}
			logger, err := testLogger(cmd)
			if err != nil {
				return err
			}
			suite, err := workflowtest.Load(app.Options{Logger: logger}, files...)
			if suite != nil {
				printWarnings(cmd.ErrOrStderr(), suite.Warnings)
			}
			if err != nil {
				return printConfigErrors(cmd.ErrOrStderr(), err)
			}
			out := cmd.OutOrStdout()
			results := suite.Run(cmd.Context(), workflowtest.RunOptions{Timeout: timeout, Filter: re},
				func(r workflowtest.Result) { printResult(out, r) })
			return testSummary(out, results, filter)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", workflowtest.DefaultTimeout, "how long one case may run, unless it sets timeout:")
	cmd.Flags().StringVar(&filter, "run", "", "run only the cases whose name matches this regular expression")
	return cmd
}

// testLogger is the logger of the workflows under test: silent unless --log-level
// is given, since cases that expect an error would otherwise fill the output.
func testLogger(cmd *cobra.Command) (*slog.Logger, error) {
	if _, level := logSettings(cmd); level == "" {
		return slog.New(slog.DiscardHandler), nil
	}
	return newLogger(cmd, "")
}

func printResult(w io.Writer, r workflowtest.Result) {
	status := "PASS"
	if !r.Passed() {
		status = "FAIL"
	}
	// A name is kept on its line, and a failure's own lines (a multi-line error)
	// stay indented under the case, so that the output reads one case at a time.
	name := strings.Join(strings.Fields(terminalSafe(r.Case.Name)), " ")
	fmt.Fprintf(w, "%s %s: %s (%v)\n", status, r.Case.Pos, name, r.Elapsed.Round(10*time.Microsecond))
	for _, f := range r.Failures {
		fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(terminalSafe(f), "\n", "\n      "))
	}
}

// testSummary prints the last line and returns the command's outcome.
func testSummary(w io.Writer, results []workflowtest.Result, filter string) error {
	failed := 0
	for _, r := range results {
		if !r.Passed() {
			failed++
		}
	}
	switch {
	case len(results) == 0:
		fmt.Fprintf(w, "no test matches --run %q\n", filter)
		return reported{code: ExitConfig}
	case failed > 0:
		fmt.Fprintf(w, "FAIL: %d of %s failed\n", failed, plural(len(results), "test"))
		return reported{code: ExitRuntime}
	}
	fmt.Fprintf(w, "ok: %s passed\n", plural(len(results), "test"))
	return nil
}
