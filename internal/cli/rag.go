package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/store/embedded"
	"github.com/arvenza/helix/pkg/app"
)

func newRAGCmd() *cobra.Command {
	rag := &cobra.Command{
		Use:   "rag",
		Short: "Run one side of a RAG pipeline (ingest its source, or query it), or check its embedded store",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	rag.AddCommand(newRAGIngestCmd(), newRAGQueryCmd(), newRAGVerifyCmd(), newRAGRepairCmd())
	return rag
}

func newRAGIngestCmd() *cobra.Command {
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "ingest FILE... PIPELINE",
		Short: "Bring a pipeline's store up to date with its source",
		Long: `Ingest loads the files, opens the store of PIPELINE (nothing else starts: no listener,
no trigger) and reads its source: new and changed documents are chunked, embedded and
stored, unchanged ones skipped, vanished ones deleted. Progress goes to stderr: on a
terminal a bar (documents done of the source's total, chunks, documents per second, time
left, failures), otherwise a line every --progress-interval. A summary ends it.

Ctrl-C (or SIGTERM) stops it cleanly: the documents being processed are abandoned (a
document is stored whole or not at all), nothing is deleted, the store is closed. Running
the same command again resumes: what was stored is skipped as unchanged. A second Ctrl-C
quits at once (the store stays consistent: it keeps every document it acknowledged).
Exit status 1 when some documents failed or the ingest was interrupted.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if interval < 0 {
				return configError(fmt.Errorf("--progress-interval %s: want a positive duration such as 10s", interval))
			}
			files, id := args[:len(args)-1], args[len(args)-1]
			p, stop, err := openPipeline(cmd, files, id)
			if err != nil {
				return err
			}
			defer stop()
			if p.Config().Source == nil {
				return configError(fmt.Errorf("pipeline %s has no source: feed it with rag-ingest steps of a running workflow", id))
			}
			ctx, stopSignals := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stopSignals()
			stderr := cmd.ErrOrStderr()
			ingested := make(chan struct{})
			go func() {
				select {
				case <-ingested:
				case <-ctx.Done():
					if cmd.Context().Err() == nil {
						// A signal: the next one gets the default action (the
						// process ends at once).
						stopSignals()
						fmt.Fprintf(stderr, "\n%s: stopping: the documents in flight are abandoned, the store is being closed (Ctrl-C again to quit at once)\n", id)
					}
				}
			}()
			res, err := ingestWithProgress(ctx, p, stderr, interval)
			close(ingested)
			out := cmd.OutOrStdout()
			if errors.Is(err, context.Canceled) {
				stored := res.Ingested + res.Skipped
				fmt.Fprintf(out, "%s: interrupted after %d documents: %d ingested, %d unchanged, %d failed; %d chunks written in %s%s\n",
					id, res.Ingested+res.Skipped+res.Errors, res.Ingested, res.Skipped, res.Errors, res.Chunks, res.Took.Round(time.Millisecond), rateNote(res))
				return runtimeError(fmt.Errorf("interrupted: the %d documents stored so far are kept; run the same command again to resume (they are skipped as unchanged)", stored))
			}
			fmt.Fprintf(out, "%s: %d documents: %d ingested, %d unchanged, %d deleted, %d failed; %d chunks written in %s%s\n",
				id, res.Seen, res.Ingested, res.Skipped, res.Deleted, res.Errors, res.Chunks, res.Took.Round(time.Millisecond), rateNote(res))
			if err != nil {
				return runtimeError(err)
			}
			if res.Errors > 0 {
				return runtimeError(fmt.Errorf("%d documents failed (see the log above)", res.Errors))
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&interval, "progress-interval", 0, "how often a progress line is printed when stderr is not a terminal (default 10s; a terminal's bar is redrawn continuously)")
	return cmd
}

// rateNote is " (N documents/s)" for a result that took measurable time.
func rateNote(res pipeline.Result) string {
	n := res.Ingested + res.Skipped + res.Errors
	if n == 0 || res.Took < time.Millisecond {
		return ""
	}
	return fmt.Sprintf(" (%s documents/s)", thousands(int(float64(n)/res.Took.Seconds())))
}

func newRAGQueryCmd() *cobra.Command {
	var topK int
	var strategy, output, filter string
	cmd := &cobra.Command{
		Use:   `query FILE... PIPELINE "QUERY"`,
		Short: "Query a pipeline's store and print the passages found",
		Long: `Query loads the files, opens the store of PIPELINE (without ingesting: run helix rag
ingest first, or helix run) and prints the passages that answer QUERY in the pipeline's
output (text: numbered sources; json), or in --output.`,
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, id, text := args[:len(args)-2], args[len(args)-2], args[len(args)-1]
			if output != "" && output != pipeline.OutputText && output != pipeline.OutputJSON {
				return configError(fmt.Errorf("--output %q: use text or json", output))
			}
			f, err := parseFilterFlag(filter)
			if err != nil {
				return configError(err)
			}
			p, stop, err := openPipeline(cmd, files, id)
			if err != nil {
				return err
			}
			defer stop()
			hits, err := p.Query(cmd.Context(), pipeline.Query{Text: text, TopK: topK, Strategy: strategy, Filter: f})
			if err != nil {
				return runtimeError(err)
			}
			if output == "" {
				output = p.Config().Output
			}
			b, _, err := pipeline.Format(output, text, hits)
			if err != nil {
				return runtimeError(err)
			}
			if output == pipeline.OutputJSON {
				// For people and jq, not for a web page: passages keep their <, > and &.
				b = unescapeHTML(b)
			}
			out := cmd.OutOrStdout()
			if _, err := out.Write(b); err != nil {
				return err
			}
			if len(b) > 0 && b[len(b)-1] != '\n' {
				_, err = io.WriteString(out, "\n")
			}
			return err
		},
	}
	cmd.Flags().IntVar(&topK, "top-k", 0, "passages to return (default: the pipeline's top_k)")
	cmd.Flags().StringVar(&strategy, "strategy", "", "vector, keyword or hybrid (default: the pipeline's)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "text or json (default: the pipeline's output)")
	cmd.Flags().StringVar(&filter, "filter", "", `a metadata filter as JSON, ANDed with the pipeline's own ('{"lang": "en", "year": {"$gte": 2023}}')`)
	return cmd
}

// parseFilterFlag reads --filter: a JSON object, checked as a tool's filter
// argument is.
func parseFilterFlag(s string) (rag.Filter, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		if err == nil {
			err = errors.New("more than one JSON value")
		}
		return nil, fmt.Errorf(`--filter is not JSON (%v): write an object such as '{"lang": "en"}'`, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New(`--filter must be a JSON object, such as '{"lang": "en", "year": {"$gte": 2023}}'`)
	}
	f := rag.Filter(m)
	if _, err := f.Parse(); err != nil {
		return nil, fmt.Errorf("--filter: %w", err)
	}
	return f, nil
}

// openPipeline loads files and opens pipeline id's parts (store, embedder); stop
// closes them.
func openPipeline(cmd *cobra.Command, files []string, id string) (*pipeline.Pipeline, func(), error) {
	logger, err := newLogger(cmd, "")
	if err != nil {
		return nil, nil, err
	}
	a, cfg, err := app.Load(app.Options{Logger: logger}, files...)
	if cfg != nil {
		printWarnings(cmd.ErrOrStderr(), cfg.Warnings)
	}
	if err != nil {
		return nil, nil, printConfigErrors(cmd.ErrOrStderr(), err)
	}
	p, ok := a.Pipeline(id)
	if !ok {
		ids := make([]string, 0, len(a.Pipelines()))
		for _, p := range a.Pipelines() {
			ids = append(ids, p.ID())
		}
		sort.Strings(ids)
		if len(ids) == 0 {
			return nil, nil, configError(fmt.Errorf("no pipeline %q: the files declare no pipelines", id))
		}
		return nil, nil, configError(fmt.Errorf("no pipeline %q (pipelines: %s)", id, strings.Join(ids, ", ")))
	}
	if err := p.Open(cmd.Context()); err != nil {
		return nil, nil, runtimeError(err)
	}
	return p, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), 30*time.Second)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			logger.Warn("close the pipeline", "pipeline", id, "err", err)
		}
	}, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	// A character device is not enough: /dev/null is one too, and a command
	// run with </dev/null must not be taken for a person at a terminal.
	return ok && term.IsTerminal(int(f.Fd()))
}

// ingestWithProgress runs the source ingest, reporting its progress on w: a bar
// redrawn in place on a terminal, a line every interval otherwise (0: 10s). The
// error is the ingest's; context.Canceled when ctx ended it.
func ingestWithProgress(ctx context.Context, p *pipeline.Pipeline, w io.Writer, interval time.Duration) (pipeline.Result, error) {
	tty := isTerminal(w)
	width := 0
	if tty {
		interval = 150 * time.Millisecond
		if f, ok := w.(*os.File); ok {
			width, _, _ = term.GetSize(int(f.Fd()))
		}
	} else if interval <= 0 {
		interval = 10 * time.Second
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		var meter rateMeter
		frame := 0
		for {
			select {
			case <-done:
				if tty {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case now := <-t.C:
				pr := p.Progress()
				rate := meter.rate(now, pr)
				if tty {
					fmt.Fprintf(w, "\r\033[K%s", fitWidth(progressBar(p.ID(), pr, rate, frame), width))
					frame++
				} else {
					fmt.Fprintln(w, progressLine(p.ID(), pr, rate))
				}
			}
		}
	}()
	res, err := p.IngestSource(ctx)
	close(done)
	<-finished
	if err != nil && ctx.Err() != nil {
		err = context.Canceled
	}
	return res, err
}

// docsDone is how many documents an ingest has finished with (stored, found
// unchanged or failed).
func docsDone(pr pipeline.Progress) int { return pr.Ingested + pr.Skipped + pr.Errors }

// rateWindow is how far back the rate looks: long enough to smooth the store's
// pauses, short enough that a resumed ingest's burst of unchanged documents
// stops counting soon.
const rateWindow = 10 * time.Second

// rateMeter turns samples of documents done into a rate over the last
// rateWindow.
type rateMeter struct {
	samples []rateSample
}

type rateSample struct {
	at   time.Time
	done int
}

// add records that done documents were finished at now and returns the rate in
// documents per second over the window (0 until two samples are apart).
func (m *rateMeter) add(now time.Time, done int) float64 {
	m.samples = append(m.samples, rateSample{now, done})
	drop := 0
	for drop < len(m.samples)-2 && now.Sub(m.samples[drop+1].at) >= rateWindow {
		drop++
	}
	m.samples = m.samples[drop:]
	first := m.samples[0]
	dt := now.Sub(first.at).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(done-first.done) / dt
}

// rate adds pr to the meter and returns the rate over the window; before
// there are two samples, the rate since the ingest started.
func (m *rateMeter) rate(now time.Time, pr pipeline.Progress) float64 {
	r := m.add(now, docsDone(pr))
	if len(m.samples) < 2 && !pr.Started.IsZero() {
		if el := now.Sub(pr.Started).Seconds(); el > 0 {
			r = float64(docsDone(pr)) / el
		}
	}
	return r
}

// eta is the time left at rate, "" when it cannot be told (no total yet, no
// rate).
func eta(pr pipeline.Progress, rate float64) string {
	left := pr.Total - docsDone(pr)
	if pr.Total == 0 || left <= 0 || rate <= 0 {
		return ""
	}
	d := time.Duration(float64(left) / rate * float64(time.Second))
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// total is the documents the bar counts to: the source's count once known (at
// least what was read, as the count is an estimate), else what was read.
func total(pr pipeline.Progress) (n int, known bool) {
	if pr.Total > 0 {
		return max(pr.Total, pr.Seen), true
	}
	return pr.Seen, false
}

// progressBar is a terminal progress line: the share of the source's documents
// done, the counts, the rate and the time left.
func progressBar(id string, pr pipeline.Progress, rate float64, frame int) string {
	const width = 24
	doneDocs := docsDone(pr)
	n, known := total(pr)
	filled, pct := 0, ""
	if n > 0 && known {
		filled = min(width, width*doneDocs/n)
		pct = fmt.Sprintf(" %3d%%", 100*doneDocs/n)
	}
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	if !known {
		// No total yet: a cursor sweeps the bar.
		pos := frame % width
		bar = strings.Repeat(" ", pos) + "<=>" + strings.Repeat(" ", width-pos)
		bar = bar[:width]
	}
	of := thousands(n)
	if !known {
		of += "+"
	}
	line := fmt.Sprintf("%s %c [%s]%s %s/%s documents, %s chunks, %s/s", id, `|/-\`[frame%4], bar, pct,
		thousands(doneDocs), of, thousands(pr.Chunks), thousands(int(rate)))
	if e := eta(pr, rate); e != "" {
		line += ", ETA " + e
	}
	if pr.Skipped > 0 {
		line += ", " + thousands(pr.Skipped) + " unchanged"
	}
	return line + ", " + thousands(pr.Errors) + " failed"
}

// progressLine is a progress report for a log: one line, no control characters.
func progressLine(id string, pr pipeline.Progress, rate float64) string {
	n, known := total(pr)
	of := "?"
	if known {
		of = strconv.Itoa(n)
	}
	line := fmt.Sprintf("%s: %d/%s documents done (%d ingested, %d unchanged, %d failed), %d chunks, %.0f documents/s", id,
		docsDone(pr), of, pr.Ingested, pr.Skipped, pr.Errors, pr.Chunks, rate)
	if e := eta(pr, rate); e != "" {
		line += ", ETA " + e
	}
	return line
}

// fitWidth cuts a line to a terminal's width (0: unknown, unchanged): a line
// that wraps cannot be redrawn in place.
func fitWidth(s string, width int) string {
	if width <= 1 || utf8.RuneCountInString(s) < width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1])
}

// thousands writes n with thin separators: 1,234,567.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func newRAGVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify DIR | FILE... PIPELINE",
		Short: "Check an embedded RAG store's log and report damaged records (changes nothing)",
		Long: `Verify reads the log of an embedded RAG store — the directory DIR, or the store of
PIPELINE declared in FILE... — and reports its valid records and every damaged stretch (its
offset, its bytes and why it was refused). Nothing is written. Exit status 1 when there is
damage: helix rag repair rewrites the store without it. A store open in another process is
refused (stop that process first).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := embeddedStoreDir(cmd, args)
			if err != nil {
				return err
			}
			rep, err := embedded.Verify(dir)
			if err != nil {
				return storeError(err)
			}
			printStoreReport(cmd.OutOrStdout(), rep)
			if len(rep.Damage) > 0 {
				return runtimeError(fmt.Errorf("%d damaged stretches in %s: the store skips them when it opens; `helix rag repair %s` rewrites it without them", len(rep.Damage), rep.Path, dir))
			}
			return nil
		},
	}
}

func newRAGRepairCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "repair DIR | FILE... PIPELINE",
		Short: "Rewrite an embedded RAG store's log without its damaged records",
		Long: `Repair rewrites the log of an embedded RAG store (the directory DIR, or the store of
PIPELINE declared in FILE...) with every valid record and without the damaged stretches that
helix rag verify reports. The new log is written to a temporary file, synced and renamed over
the old one, which stays next to it as chunks.log.damaged-<time> (delete it once satisfied).
A store without damage is left as it is. Documents whose record was damaged are back after
the next ingest of the pipeline's source (rag-ingest steps must send them again).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := embeddedStoreDir(cmd, args)
			if err != nil {
				return err
			}
			res, err := embedded.Repair(dir)
			if err != nil {
				return storeError(err)
			}
			out := cmd.OutOrStdout()
			printStoreReport(out, res.Report)
			if !res.Rewritten {
				fmt.Fprintf(out, "nothing to repair\n")
				return nil
			}
			fmt.Fprintf(out, "repaired %s: kept %d valid records, dropped %d damaged stretches; the damaged log is kept as %s\n",
				res.Path, res.Kept, len(res.Damage), res.Backup)
			return nil
		},
	}
}

// storeError classes a Verify or Repair error: no store where one was named is
// the caller's mistake (exit 2), anything else a runtime failure.
func storeError(err error) error {
	if strings.Contains(err.Error(), "no RAG store in") || strings.Contains(err.Error(), "not a Helix RAG store log") {
		return configError(err)
	}
	return runtimeError(err)
}

func printStoreReport(w io.Writer, rep embedded.Report) {
	fmt.Fprintf(w, "%s: format %d, %d bytes, %d valid records, %d documents", rep.Path, rep.Format, rep.Size, rep.Records, rep.Documents)
	if len(rep.Damage) == 0 {
		fmt.Fprintln(w, ", no damage")
		return
	}
	fmt.Fprintf(w, ", %d damaged stretches\n", len(rep.Damage))
	for _, d := range rep.Damage {
		end := ""
		if d.AtEnd(rep.Size) {
			end = " (to the end of the file)"
		}
		fmt.Fprintf(w, "  damaged: offset %d, %d bytes%s: %s\n", d.Offset, d.Length, end, d.Reason)
	}
}

// embeddedStoreDir is the store directory args name: one directory, or config
// files and a pipeline id whose rag-store is embedded.
func embeddedStoreDir(cmd *cobra.Command, args []string) (string, error) {
	if len(args) == 1 {
		st, err := os.Stat(args[0])
		if err != nil || !st.IsDir() {
			return "", configError(fmt.Errorf("no RAG store in %s: give the store's directory, or the configuration files and the pipeline id", args[0]))
		}
		return args[0], nil
	}
	logger, err := newLogger(cmd, "")
	if err != nil {
		return "", err
	}
	files, id := args[:len(args)-1], args[len(args)-1]
	a, cfg, err := app.Load(app.Options{Logger: logger}, files...)
	if cfg != nil {
		printWarnings(cmd.ErrOrStderr(), cfg.Warnings)
	}
	if err != nil {
		return "", printConfigErrors(cmd.ErrOrStderr(), err)
	}
	p, ok := a.Pipeline(id)
	if !ok {
		return "", configError(fmt.Errorf("no pipeline %q in %s", id, strings.Join(files, ", ")))
	}
	pc := p.Config()
	if pc.Store.Store != config.DefaultRAGStore {
		return "", configError(fmt.Errorf("pipeline %s keeps its chunks in %s, which checks its own data: verify and repair are for the embedded store", id, pc.Store.Store))
	}
	return pc.StorePath(cfg.Helix.DataDir), nil
}
