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
	"strings"
	"syscall"
	"time"

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
	return &cobra.Command{
		Use:   "ingest FILE... PIPELINE",
		Short: "Bring a pipeline's store up to date with its source",
		Long: `Ingest loads the files, opens the store of PIPELINE (nothing else starts: no listener,
no trigger) and reads its source: new and changed documents are chunked, embedded and
stored, unchanged ones skipped, vanished ones deleted. Progress goes to stderr, as a bar on
a terminal and as lines otherwise. Exit status 1 when some documents failed.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, id := args[:len(args)-1], args[len(args)-1]
			p, stop, err := openPipeline(cmd, files, id)
			if err != nil {
				return err
			}
			defer stop()
			if p.Config().Source == nil {
				return configError(fmt.Errorf("pipeline %s has no source: feed it with rag-ingest steps of a running workflow", id))
			}
			// Ctrl-C stops the ingest cleanly: what was stored stays, and the next
			// ingest carries on from there (unchanged documents are skipped).
			ctx, stopSignals := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stopSignals()
			res, err := ingestWithProgress(ctx, p, cmd.ErrOrStderr())
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d documents: %d ingested, %d unchanged, %d deleted, %d failed; %d chunks written in %s\n",
				id, res.Seen, res.Ingested, res.Skipped, res.Deleted, res.Errors, res.Chunks, res.Took.Round(time.Millisecond))
			if err != nil {
				return runtimeError(err)
			}
			if res.Errors > 0 {
				return runtimeError(fmt.Errorf("%d documents failed (see the log above)", res.Errors))
			}
			return nil
		},
	}
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
// redrawn in place on a terminal, a line every few seconds otherwise.
func ingestWithProgress(ctx context.Context, p *pipeline.Pipeline, w io.Writer) (pipeline.Result, error) {
	tty := isTerminal(w)
	interval := 2 * time.Second
	if tty {
		interval = 100 * time.Millisecond
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		frame := 0
		for {
			select {
			case <-done:
				if tty {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-t.C:
				pr := p.Progress()
				if tty {
					fmt.Fprintf(w, "\r\033[K%s", progressBar(p.ID(), pr, frame))
					frame++
				} else {
					fmt.Fprintln(w, progressLine(p.ID(), pr))
				}
			}
		}
	}()
	res, err := p.IngestSource(ctx)
	close(done)
	<-finished
	if errors.Is(err, context.Canceled) {
		err = errors.New("interrupted")
	}
	return res, err
}

// progressBar is a terminal progress line: the share of documents read that are
// done (the total is unknown until the source has been walked), and the counts.
func progressBar(id string, pr pipeline.Progress, frame int) string {
	const width = 24
	doneDocs := pr.Ingested + pr.Skipped + pr.Errors
	filled := 0
	if pr.Seen > 0 {
		filled = width * doneDocs / pr.Seen
	}
	spin := `|/-\`[frame%4]
	cur := pr.Current
	if len(cur) > 40 {
		cur = "…" + cur[len(cur)-39:]
	}
	return fmt.Sprintf("%s %c [%s%s] %d/%d documents (%d unchanged, %d failed) %s", id, spin,
		strings.Repeat("=", filled), strings.Repeat(" ", width-filled), doneDocs, pr.Seen, pr.Skipped, pr.Errors, cur)
}

func progressLine(id string, pr pipeline.Progress) string {
	return fmt.Sprintf("%s: %d documents read, %d ingested, %d unchanged, %d failed, %d chunks", id,
		pr.Seen, pr.Ingested, pr.Skipped, pr.Errors, pr.Chunks)
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
