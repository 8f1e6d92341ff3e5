package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/arvenza/helix/internal/durable"
)

// helix runs opens the durable store itself, from what the files say
// (helix.durable_store, or the SQLite file under helix.data_dir), rather than
// asking a running instance: an operator inspects, resumes and approves the runs
// of an instance that crashed or is stopped, and any replica of a PostgreSQL store
// answers the same. What the command changes takes effect through the store: a run
// it resumes or approves goes on in whichever instance of the application runs
// (at its next start, when none does).

// runStoreOpener opens the durable store the files name; close releases it.
type runStoreOpener func(cmd *cobra.Command, files []string) (runs durable.Runs, close func(), err error)

// runsOutput is the --output of the runs commands.
type runsOutput string

const (
	runsText runsOutput = "text"
	runsJSON runsOutput = "json"
)

func parseRunsOutput(s string) (runsOutput, error) {
	switch runsOutput(s) {
	case "", runsText:
		return runsText, nil
	case runsJSON:
		return runsJSON, nil
	}
	return "", configError(fmt.Errorf("--output %q: use text or json", s))
}

func newRunsCmd(open runStoreOpener) *cobra.Command {
	runs := &cobra.Command{
		Use:   "runs",
		Short: "Inspect and operate durable runs: list, show, resume, cancel, approve, reject",
		Long: `The runs commands open the durable store the files name (helix.durable_store, or the
SQLite store under helix.data_dir) directly, so they work on a stopped or crashed instance's
store as well as on a running one. Runs resumed or approved here go on in the instance of
the application that runs (on its next start when none runs).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	runs.AddCommand(newRunsListCmd(open), newRunsShowCmd(open), newRunsResumeCmd(open),
		newRunsCancelCmd(open), newRunsResolveCmd(open, true), newRunsResolveCmd(open, false))
	return runs
}

func newRunsListCmd(open runStoreOpener) *cobra.Command {
	var workflow, states, output, after string
	var limit int
	cmd := &cobra.Command{
		Use:   "list FILE...",
		Short: "List durable runs in the order they started (run ids are time-ordered)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			out, err := parseRunsOutput(output)
			if err != nil {
				return err
			}
			f := durable.Filter{Workflow: workflow, Limit: limit, After: after}
			if f.States, err = parseStates(states); err != nil {
				return err
			}
			if limit < 0 {
				return configError(fmt.Errorf("--limit %d: use a positive number (0: the default, 100)", limit))
			}
			if f.Limit == 0 {
				f.Limit = 100
			}
			store, closeStore, err := open(cmd, files)
			if err != nil {
				return err
			}
			defer closeStore()
			list, err := store.List(cmd.Context(), f)
			if err != nil {
				return runtimeError(fmt.Errorf("list the runs: %w", err))
			}
			if out == runsJSON {
				if list == nil {
					list = []durable.Run{}
				}
				return writeJSON(cmd.OutOrStdout(), list)
			}
			return printRunTable(cmd.OutOrStdout(), list, f.Limit)
		},
	}
	cmd.Flags().StringVar(&workflow, "workflow", "", "only the runs of this workflow (tool, agent)")
	cmd.Flags().StringVar(&states, "state", "", "only runs in these states, comma-separated: "+strings.Join(stateNames(), ", "))
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many runs (default 100)")
	cmd.Flags().StringVar(&after, "after", "", "the page after this run id (the last of the previous page)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text (a table) or json")
	return cmd
}

var allStates = []durable.State{durable.StateWorking, durable.StateInputRequired, durable.StateWaiting,
	durable.StateCompleted, durable.StateFailed, durable.StateCancelled}

func stateNames() []string {
	names := make([]string, len(allStates))
	for i, s := range allStates {
		names[i] = string(s)
	}
	return names
}

func parseStates(s string) ([]durable.State, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []durable.State
	for _, part := range strings.Split(s, ",") {
		st := durable.State(strings.TrimSpace(part))
		known := false
		for _, k := range allStates {
			known = known || k == st
		}
		if !known {
			return nil, configError(fmt.Errorf("--state %q: unknown state %q; use %s", s, st, strings.Join(stateNames(), ", ")))
		}
		out = append(out, st)
	}
	return out, nil
}

// attemptsText is a run's executions of its segment, "-" where the store
// did not count them (a list reads only the runs' own records).
func attemptsText(n int) string {
	if n <= 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func printRunTable(w io.Writer, list []durable.Run, limit int) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "no runs")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATE\tSTEP\tSEGMENT\tATTEMPTS\tUPDATED\tWAITS FOR")
	for _, r := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", terminalSafe(r.ID), terminalSafe(r.Workflow), r.State, r.Step,
			r.Segment, attemptsText(r.Attempts), r.UpdatedAt.UTC().Format(time.RFC3339), waitSummary(r.Wait))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(list) == limit {
		_, err := fmt.Fprintf(w, "(%d runs shown; the next page: --after %s)\n", limit, terminalSafe(list[len(list)-1].ID))
		return err
	}
	return nil
}

// waitSummary is one line about what a parked run waits for.
func waitSummary(w *durable.Wait) string {
	if w == nil {
		return "-"
	}
	s := w.Kind
	if w.Message != "" {
		s += fmt.Sprintf(" %q", w.Message)
	}
	if w.Source != "" {
		s += " from " + w.Source
	}
	if !w.Due.IsZero() {
		s += " until " + w.Due.UTC().Format(time.RFC3339)
	}
	return terminalSafe(s)
}

func newRunsShowCmd(open runStoreOpener) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "show FILE... RUN",
		Short: "Show a durable run: its state, what it waits for, its checkpointed steps, its error or result",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := parseRunsOutput(output)
			if err != nil {
				return err
			}
			id := args[len(args)-1]
			store, run, closeStore, err := openRun(cmd, open, args)
			if err != nil {
				return err
			}
			defer closeStore()
			steps, err := store.Steps(cmd.Context(), id)
			if err != nil {
				return runtimeError(fmt.Errorf("run %s: read its steps: %w", terminalSafe(id), err))
			}
			if out == runsJSON {
				if steps == nil {
					steps = []durable.StepRecord{}
				}
				return writeJSON(cmd.OutOrStdout(), struct {
					Run   durable.Run          `json:"run"`
					Steps []durable.StepRecord `json:"steps"`
				}{run, steps})
			}
			return printRun(cmd.OutOrStdout(), run, steps)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

// getRun reads a run, turning "no such run" into a usage error that says where
// to look.
// openRun opens the store of the files args name (all but the last) and reads
// the run the last names.
func openRun(cmd *cobra.Command, open runStoreOpener, args []string) (durable.Runs, durable.Run, func(), error) {
	files, id := args[:len(args)-1], args[len(args)-1]
	store, closeStore, err := open(cmd, files)
	if err != nil {
		return nil, durable.Run{}, nil, err
	}
	run, err := getRun(cmd, store, id)
	if err != nil {
		closeStore()
		return nil, durable.Run{}, nil, err
	}
	return store, run, closeStore, nil
}

func getRun(cmd *cobra.Command, store durable.Runs, id string) (durable.Run, error) {
	run, err := store.Get(cmd.Context(), id)
	if errors.Is(err, durable.ErrNotFound) {
		return run, configError(fmt.Errorf("run %q: no such run in this store (helix runs list shows the runs it has)", terminalSafe(id)))
	}
	if err != nil {
		return run, runtimeError(fmt.Errorf("run %s: %w", terminalSafe(id), err))
	}
	return run, nil
}

func printRun(w io.Writer, r durable.Run, steps []durable.StepRecord) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\n", terminalSafe(r.ID))
	fmt.Fprintf(tw, "workflow\t%s\n", terminalSafe(r.Workflow))
	if r.Kind != "" {
		fmt.Fprintf(tw, "kind\t%s\n", r.Kind)
	}
	if r.State == durable.StateFailed && r.Internal {
		// Not a step's failure: the run could not go on in Helix (its
		// checkpoint, its store, its workflow, a panic); the error says which.
		fmt.Fprintf(tw, "state\t%s in Helix itself, not in a step\n", r.State)
	} else {
		fmt.Fprintf(tw, "state\t%s\n", r.State)
	}
	waits := r.Waits // several at once (parallel branches), else its one wait
	if len(waits) == 0 && r.Wait != nil {
		waits = []durable.Wait{*r.Wait}
	}
	for _, w := range waits {
		fmt.Fprintf(tw, "waits for\t%s\n", waitSummary(&w))
		if w.Key != "" {
			fmt.Fprintf(tw, "wait key\t%s\n", terminalSafe(w.Key))
		}
	}
	if r.Attempts > 0 {
		fmt.Fprintf(tw, "step\t%d (segment %d, attempt %d)\n", r.Step, r.Segment, r.Attempts)
	} else {
		fmt.Fprintf(tw, "step\t%d (segment %d)\n", r.Step, r.Segment)
	}
	if r.Principal != "" {
		fmt.Fprintf(tw, "started by\t%s\n", terminalSafe(r.Principal))
	}
	fmt.Fprintf(tw, "created\t%s\n", r.CreatedAt.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(tw, "updated\t%s\n", r.UpdatedAt.UTC().Format(time.RFC3339Nano))
	if r.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", terminalSafe(r.Error))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(steps) > 0 {
		fmt.Fprintln(w, "\nsteps:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEGMENT\tSTEP\tNAME\tAT\tTOOK\tBYTES\tERROR")
		for i, s := range steps {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%d\t%s\n", s.Segment, s.Index, terminalSafe(s.Name),
				s.At.UTC().Format("15:04:05.000"), stepTook(r, steps, i), s.Bytes, terminalSafe(s.Error))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Result) > 0 {
		var b bytes.Buffer
		if json.Indent(&b, r.Result, "", "  ") != nil {
			b.Reset()
			b.Write(r.Result)
		}
		fmt.Fprintf(w, "\nresult:\n%s\n", terminalSafe(b.String()))
	}
	return nil
}

// stepTook is how long step i ran (durable.StepTook), "-" when the store
// does not know.
func stepTook(r durable.Run, steps []durable.StepRecord, i int) string {
	d, ok := durable.StepTook(r, steps, i)
	if !ok {
		return "-"
	}
	return d.Round(time.Microsecond).String()
}

func newRunsResumeCmd(open runStoreOpener) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "resume FILE... RUN",
		Short: "Run a failed, cancelled or stuck durable run again from its last checkpoint",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[len(args)-1]
			store, run, closeStore, err := openRun(cmd, open, args)
			if err != nil {
				return err
			}
			defer closeStore()
			switch {
			case run.State == durable.StateCompleted:
				return runtimeError(fmt.Errorf("run %s completed: there is nothing to resume", terminalSafe(id)))
			case run.Wait != nil:
				return runtimeError(fmt.Errorf("run %s waits for %s: resolve the wait instead (helix runs approve or reject, or its callback)",
					terminalSafe(id), run.Wait.Kind))
			case run.State == durable.StateWorking && !force:
				// A working run is most likely running now: a second execution
				// would repeat its step's side effects.
				return runtimeError(fmt.Errorf("run %s is working: an instance may be running it now (a run of a dead replica is taken over by itself); "+
					"resume a run that is stuck with --force", terminalSafe(id)))
			}
			run, err = store.Resume(cmd.Context(), id)
			if err != nil {
				return runtimeError(fmt.Errorf("resume run %s: %w", terminalSafe(id), err))
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "run %s resumed from step %d (segment %d): %s\n", terminalSafe(id), run.Step, run.Segment, run.State)
			return err
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "resume a run that is working (stuck: no instance runs it any more)")
	return cmd
}

func newRunsCancelCmd(open runStoreOpener) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel FILE... RUN",
		Short: "Cancel a durable run that has not ended (the step in flight finishes, no later step starts)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[len(args)-1]
			store, run, closeStore, err := openRun(cmd, open, args)
			if err != nil {
				return err
			}
			defer closeStore()
			if run.State.Terminal() {
				return runtimeError(fmt.Errorf("run %s has ended already (%s): there is nothing to cancel", terminalSafe(id), run.State))
			}
			run, err = store.Cancel(cmd.Context(), id)
			if err != nil {
				return runtimeError(fmt.Errorf("cancel run %s: %w", terminalSafe(id), err))
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "run %s: %s at step %d\n", terminalSafe(id), run.State, run.Step)
			return err
		},
	}
}

// newRunsResolveCmd is helix runs approve (approve true) or reject.
func newRunsResolveCmd(open runStoreOpener, approve bool) *cobra.Command {
	var data, by, waitKey string
	verb, short := "reject", "Reject what a parked run waits for (an approve: step, or an elicit: form it declines)"
	if approve {
		verb, short = "approve", "Approve what a parked run waits for (an approve: step, or an elicit: form answered with --data)"
	}
	cmd := &cobra.Command{
		Use:   verb + " FILE... RUN",
		Short: short,
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, id := args[:len(args)-1], args[len(args)-1]
			var raw json.RawMessage
			if data != "" {
				if !json.Valid([]byte(data)) {
					return configError(fmt.Errorf("--data: not JSON; write a JSON value, e.g. --data '{\"note\":\"ok\"}'"))
				}
				raw = json.RawMessage(data)
			}
			store, closeStore, err := open(cmd, files)
			if err != nil {
				return err
			}
			defer closeStore()
			run, err := getRun(cmd, store, id)
			if err != nil {
				return err
			}
			if run, err = pickWait(run, waitKey); err != nil {
				return err
			}
			res, err := resolutionFor(run, approve, raw)
			if err != nil {
				return err
			}
			if len(run.Waits) > 0 {
				res.Key = run.Wait.Key // one of several: this one only
			}
			if by == "" {
				by = cliPrincipal()
			}
			res.By = by
			run, err = store.Resolve(cmd.Context(), id, res)
			if errors.Is(err, durable.ErrNotWaiting) {
				return runtimeError(fmt.Errorf("run %s is not waiting any more: it was resolved already (the first resolution wins)", terminalSafe(id)))
			}
			if err != nil {
				return runtimeError(fmt.Errorf("%s run %s: %w", verb, terminalSafe(id), err))
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "run %s: %s; it goes on from step %d (%s)\n", terminalSafe(id), res.Kind, run.Step, run.State)
			return err
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "JSON the step receives with the decision (an elicit: form's answer)")
	cmd.Flags().StringVar(&by, "by", "", "who decides, recorded with the run (default cli:<your user name>)")
	cmd.Flags().StringVar(&waitKey, "wait", "", "the key of the wait to resolve, when the run waits for several at once (helix runs show lists them)")
	return cmd
}

// pickWait returns run with Wait set to the wait key names among those the run
// waits for (its only one when key is empty), or why there is none.
func pickWait(run durable.Run, key string) (durable.Run, error) {
	id := terminalSafe(run.ID)
	if len(run.Waits) == 0 {
		if key != "" && run.Wait != nil && run.Wait.Key != key {
			return run, runtimeError(fmt.Errorf("run %s waits for %s %q, not %q", id, run.Wait.Kind, terminalSafe(run.Wait.Key), terminalSafe(key)))
		}
		return run, nil
	}
	keys := make([]string, len(run.Waits))
	for i, w := range run.Waits {
		if w.Key == key || key == "" && len(run.Waits) == 1 {
			run.Wait = &w
			return run, nil
		}
		keys[i] = terminalSafe(w.Key)
	}
	if key == "" {
		return run, configError(fmt.Errorf("run %s waits for %d things at once (keys %s): say which with --wait KEY", id, len(run.Waits), strings.Join(keys, ", ")))
	}
	return run, runtimeError(fmt.Errorf("run %s waits for nothing with key %q (its keys: %s); it may have been answered already", id, terminalSafe(key), strings.Join(keys, ", ")))
}

// resolutionFor is the Resolution approve or reject gives the wait run is
// parked on, or why it cannot resolve it.
func resolutionFor(run durable.Run, approve bool, data json.RawMessage) (durable.Resolution, error) {
	id := terminalSafe(run.ID)
	if run.Wait == nil {
		if run.State.Terminal() {
			return durable.Resolution{}, runtimeError(fmt.Errorf("run %s has ended (%s): it waits for nothing", id, run.State))
		}
		return durable.Resolution{}, runtimeError(fmt.Errorf("run %s is %s: it waits for nothing (resolved already, or not parked yet)", id, run.State))
	}
	switch run.Wait.Kind {
	case durable.WaitApprove:
		if approve {
			return durable.Resolution{Kind: durable.ResolvedApproved, Data: data}, nil
		}
		return durable.Resolution{Kind: durable.ResolvedRejected, Data: data}, nil
	case durable.WaitElicit:
		if !approve {
			return durable.Resolution{Kind: durable.ResolvedDeclined}, nil
		}
		if len(data) == 0 || data[0] != '{' {
			return durable.Resolution{}, configError(fmt.Errorf("run %s waits for a form: answer it with --data and a JSON object matching its schema", id))
		}
		return durable.Resolution{Kind: durable.ResolvedAnswered, Data: data}, nil
	}
	return durable.Resolution{}, runtimeError(fmt.Errorf("run %s waits for %s, which no person decides: approve and reject resolve approve: and elicit: waits only",
		id, run.Wait.Kind))
}

// cliPrincipal names the operator for a resolution's By.
func cliPrincipal() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}
