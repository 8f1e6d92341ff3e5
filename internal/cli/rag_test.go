package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/store/embedded"
	"github.com/arvenza/helix/internal/testtools"
)

// helix rag ingest and helix rag query on a temporary directory, with Helix's
// own parts (embedded store, no embedder): nothing but the files.
func TestRAGIngestAndQuery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"install.md": "# Install\n\nRun ./install.sh as root, then reboot.\n",
		"billing.md": "# Billing\n\nInvoices are emailed monthly.\n",
	} {
		if err := os.WriteFile(filepath.Join(docs, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "helix.yaml")
	yaml := `helix: {data_dir: "` + filepath.Join(dir, "data") + `"}
pipelines:
  - id: docs
    source: file://` + docs + `
    steps:
      - rag-retrieve: {strategy: keyword, top_k: 3}
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := execute(t, "rag", "ingest", file, "docs")
	if code != 0 || !strings.Contains(out, "docs: 2 documents: 2 ingested, 0 unchanged, 0 deleted, 0 failed") {
		t.Fatalf("ingest: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = execute(t, "rag", "ingest", file, "docs")
	if code != 0 || !strings.Contains(out, "2 documents: 0 ingested, 2 unchanged") {
		t.Fatalf("re-ingest: %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = execute(t, "rag", "ingest", "--progress-interval", "-1s", file, "docs")
	if code != ExitConfig || !strings.Contains(errOut, "--progress-interval -1s: want a positive duration") {
		t.Errorf("negative --progress-interval: %d %s", code, errOut)
	}
	code, out, errOut = execute(t, "rag", "query", file, "docs", "how to install")
	if code != 0 || !strings.HasPrefix(out, "[1] install.md (Install)\n") {
		t.Fatalf("query: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = execute(t, "rag", "query", "--output", "json", "--top-k", "1", file, "docs", "invoices")
	var res pipeline.JSONOutput
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Results) != 1 || res.Results[0].DocID != "file:billing.md" {
		t.Fatalf("json query: %d %s", code, out)
	}
	code, _, errOut = execute(t, "rag", "query", file, "doc", "x")
	if code != ExitConfig || !strings.Contains(errOut, `no pipeline "doc" (pipelines: docs)`) {
		t.Errorf("unknown pipeline: %d %s", code, errOut)
	}
	code, out, _ = execute(t, "validate", file)
	if code != 0 || !strings.Contains(out, "1 pipeline") {
		t.Errorf("validate: %d %s", code, out)
	}
}

func TestProgressBar(t *testing.T) {
	t.Parallel()
	pr := pipeline.Progress{Result: pipeline.Result{Seen: 4, Ingested: 1, Skipped: 1, Chunks: 3}, Running: true, Current: "file:a.md"}
	// The source not counted yet: no share, no ETA, a sweeping cursor.
	got := progressBar("docs", pr, 0, 1)
	if want := "docs / [ <=>                    ] 2/4+ documents, 3 chunks, 0/s, 1 unchanged, 0 failed"; got != want {
		t.Errorf("bar %q\nwant %q", got, want)
	}
	pr.Total, pr.Seen, pr.Ingested, pr.Skipped, pr.Errors, pr.Chunks = 1_000_000, 250_100, 200_000, 50_000, 3, 400_000
	got = progressBar("docs", pr, 2500, 2)
	if want := "docs - [======                  ]  25% 250,003/1,000,000 documents, 400,000 chunks, 2,500/s, ETA 5m0s, 50,000 unchanged, 3 failed"; got != want {
		t.Errorf("bar %q\nwant %q", got, want)
	}
	got = progressLine("docs", pr, 2500)
	if want := "docs: 250003/1000000 documents done (200000 ingested, 50000 unchanged, 3 failed), 400000 chunks, 2500 documents/s, ETA 5m0s"; got != want {
		t.Errorf("line %q\nwant %q", got, want)
	}
	// A count below what was read (it is an estimate) is not a total to trust.
	pr.Total, pr.Seen = 10, 20
	if got := progressLine("docs", pr, 100); !strings.Contains(got, "/20 documents") || strings.Contains(got, "ETA") {
		t.Errorf("line with a low count: %q", got)
	}
	if got := fitWidth("0123456789", 6); got != "01234" {
		t.Errorf("fitWidth %q", got)
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4000: "-4,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// The rate is over the last rateWindow: a resumed ingest's burst of unchanged
// documents stops inflating it once it is that far back.
func TestRateMeter(t *testing.T) {
	t.Parallel()
	var m rateMeter
	t0 := time.Unix(1000, 0)
	if r := m.add(t0, 0); r != 0 {
		t.Errorf("one sample: %v", r)
	}
	if r := m.add(t0.Add(time.Second), 100_000); r != 100_000 { // the burst
		t.Errorf("burst: %v", r)
	}
	var r float64
	for i := 2; i <= 30; i++ {
		r = m.add(t0.Add(time.Duration(i)*time.Second), 100_000+(i-1)*50)
	}
	if r < 49 || r > 51 {
		t.Errorf("rate after the window passed the burst: %v, want 50", r)
	}
	if len(m.samples) > 12 {
		t.Errorf("the meter keeps %d samples", len(m.samples))
	}
	// The first report has no earlier sample: the rate since the start.
	var fresh rateMeter
	pr := pipeline.Progress{Result: pipeline.Result{Ingested: 900, Skipped: 100}, Started: t0}
	if r := fresh.rate(t0.Add(4*time.Second), pr); r != 250 {
		t.Errorf("first rate %v, want 250", r)
	}
}

// ingestSource writes n one-chunk Markdown documents, each with a word of its
// own, and a pipeline over them.
func ingestSource(t *testing.T, n int) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	docs := filepath.Join(dir, "docs")
	for i := range n {
		sub := filepath.Join(docs, fmt.Sprintf("part%02d", i%10))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("# Document %d\n\nThe word uniq%dword is only here.\n", i, i)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("doc%04d.md", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file = filepath.Join(dir, "helix.yaml")
	yaml := `helix: {data_dir: "` + filepath.Join(dir, "data") + `"}
pipelines:
  - id: docs
    source: file://` + docs + `
    steps:
      - rag-retrieve: {strategy: keyword, top_k: 3}
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// lineWatcher is a stderr that calls at once when a progress line reports at
// least after documents done.
type lineWatcher struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	after int
	at    func()
}

var progressDone = regexp.MustCompile(`docs: (\d+)/\S+ documents done`)

func (w *lineWatcher) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m := progressDone.FindSubmatch(b); m != nil && w.at != nil {
		if n, _ := strconv.Atoi(string(m[1])); n >= w.after {
			w.at()
			w.at = nil
		}
	}
	return w.buf.Write(b)
}

func (w *lineWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

var interruptedSummary = regexp.MustCompile(`docs: interrupted after (\d+) documents: (\d+) ingested, 0 unchanged, 0 failed`)

// checkResumed runs the ingest again after an interrupted one that stored
// first documents: it must store the rest only, and leave every document of
// the source stored exactly once.
func checkResumed(t *testing.T, dir, file string, n, first int) {
	t.Helper()
	code, out, errOut := execute(t, "rag", "ingest", file, "docs")
	want := fmt.Sprintf("docs: %d documents: %d ingested, %d unchanged, 0 deleted, 0 failed", n, n-first, first)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("resumed ingest: %d\n%s\n%s\nwant %q", code, out, errOut, want)
	}
	st, err := embedded.Open(filepath.Join(dir, "data", "rag", "docs"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stats, err := st.Stats(context.Background())
	if err != nil || stats.Documents != n || stats.Chunks != n {
		t.Fatalf("store holds %+v (%v), want %d documents of one chunk each", stats, err, n)
	}
	for i := range n {
		hits, err := st.SearchKeyword(context.Background(), fmt.Sprintf("uniq%dword", i), 5, nil)
		if err != nil || len(hits) != 1 || !strings.HasSuffix(hits[0].Chunk.DocID, fmt.Sprintf("/doc%04d.md", i)) {
			t.Fatalf("document %d: hits %+v (%v), want exactly its chunk", i, hits, err)
		}
	}
}

// An ingest cancelled midway (as Ctrl-C does) stops cleanly and says how to
// resume; the next run skips what the first stored and stores the rest.
func TestRAGIngestInterruptAndResume(t *testing.T) {
	t.Parallel()
	const n = 1500
	dir, file := ingestSource(t, n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lineWatcher{after: 20, at: cancel}
	var stdout bytes.Buffer
	code := ExecuteContext(ctx, []string{"rag", "ingest", "--progress-interval", "1ms", file, "docs"}, strings.NewReader(""), &stdout, stderr)
	m := interruptedSummary.FindStringSubmatch(stdout.String())
	if code != ExitRuntime || m == nil || !strings.Contains(stderr.String(), "run the same command again to resume") {
		t.Fatalf("interrupted ingest: %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	first, _ := strconv.Atoi(m[2])
	if first < 20 || first >= n {
		t.Fatalf("the interrupted ingest stored %d of %d documents", first, n)
	}
	checkResumed(t, dir, file, n, first)
}

// The same with a real process and SIGINT: the store is closed (the next run
// can open it) and the run after resumes.
func TestRAGIngestSIGINT(t *testing.T) {
	t.Parallel()
	const n = 1500
	dir, file := ingestSource(t, n)
	cmd := exec.Command(testtools.HelixBinary(t), "rag", "ingest", "--progress-interval", "1ms", file, "docs")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr := &lineWatcher{after: 20}
	stderr.at = func() { _ = cmd.Process.Signal(syscall.SIGINT) }
	cmd.Stderr = stderr
	stderr.mu.Lock() // the watcher must not signal before Start has set cmd.Process
	if err := cmd.Start(); err != nil {
		stderr.mu.Unlock()
		t.Fatal(err)
	}
	stderr.mu.Unlock()
	err := cmd.Wait()
	var exit *exec.ExitError
	m := interruptedSummary.FindStringSubmatch(stdout.String())
	if !errors.As(err, &exit) || exit.ExitCode() != ExitRuntime || m == nil ||
		!strings.Contains(stderr.String(), "stopping: the documents in flight are abandoned") {
		t.Fatalf("helix rag ingest after SIGINT: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	first, _ := strconv.Atoi(m[2])
	checkResumed(t, dir, file, n, first)
}

// helix mcp list marks pipelines [pipe  ]; listing opens no store (nothing is
// created under data_dir) and warns that hybrid falls back to keyword.
func TestMCPListMarksPipelines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "helix.yaml")
	yaml := `helix: {data_dir: "` + filepath.Join(dir, "data") + `"}
pipelines:
  - id: doc-search
    description: "Search the docs"
    source: file://` + dir + `
mcps:
  - id: kb
    addr: 127.0.0.1:0
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := execute(t, "mcp", "list", file)
	if code != ExitOK || !strings.Contains(out, "doc-search") || !strings.Contains(out, "[pipe  ] Search the docs") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "falls back to keyword") {
		t.Errorf("no fallback warning: %s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("listing created the data directory: %v", err)
	}
}

// helix rag verify reports a damaged record with its offset and exits 1 without
// touching the store; helix rag repair rewrites it without the damage.
func TestRAGVerifyAndRepair(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.md", "b.md", "c.md"} {
		if err := os.WriteFile(filepath.Join(docs, name), []byte("# "+name+"\n\nSome text about "+name+".\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "helix.yaml")
	yaml := `helix: {data_dir: "` + filepath.Join(dir, "data") + `"}
pipelines:
  - id: docs
    source: file://` + docs + `
    steps:
      - rag-retrieve: {strategy: keyword}
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := execute(t, "rag", "ingest", file, "docs"); code != 0 {
		t.Fatalf("ingest: %d\n%s\n%s", code, out, errOut)
	}
	store := filepath.Join(dir, "data", "rag", "docs")
	code, out, errOut := execute(t, "rag", "verify", file, "docs")
	if code != 0 || !strings.Contains(out, "3 valid records, 3 documents, no damage") {
		t.Fatalf("verify of a clean store: %d\n%s\n%s", code, out, errOut)
	}

	log := filepath.Join(store, "chunks.log")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x55 // somewhere in the middle record
	if err := os.WriteFile(log, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = execute(t, "rag", "verify", store)
	if code != ExitRuntime || !regexp.MustCompile(`damaged: offset \d+, \d+ bytes: `).MatchString(out) ||
		!strings.Contains(out, "2 valid records") || !strings.Contains(errOut, "helix rag repair") {
		t.Fatalf("verify of a damaged store: %d\n%s\n%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(log); !bytes.Equal(after, b) {
		t.Fatal("verify changed the store")
	}
	// A query (read-only) leaves the damaged file as it is too.
	if code, out, errOut := execute(t, "rag", "query", file, "docs", "text"); code != 0 {
		t.Fatalf("query of a damaged store: %d\n%s\n%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(log); !bytes.Equal(after, b) {
		t.Fatal("a query changed the store")
	}

	code, out, errOut = execute(t, "rag", "repair", file, "docs")
	if code != 0 || !strings.Contains(out, "kept 2 valid records") || !strings.Contains(out, "chunks.log.damaged-") {
		t.Fatalf("repair: %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := execute(t, "rag", "verify", store); code != 0 || !strings.Contains(out, "no damage") {
		t.Fatalf("verify after repair: %d\n%s\n%s", code, out, errOut)
	}
	if code, out, _ := execute(t, "rag", "repair", store); code != 0 || !strings.Contains(out, "nothing to repair") {
		t.Fatalf("repair of a clean store: %d\n%s", code, out)
	}
	if code, _, errOut := execute(t, "rag", "verify", filepath.Join(dir, "nowhere")); code != ExitConfig || !strings.Contains(errOut, "no RAG store in") {
		t.Fatalf("verify of no store: %d %s", code, errOut)
	}
}

// rag query -o json prints passages as people wrote them: <, > and & are not
// turned into \u003c, \u003e and \u0026.
func TestRAGQueryJSONKeepsHTMLCharacters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	text := "# Compare <a> & <b>\n\nUse a < b && b > c to compare.\n"
	if err := os.WriteFile(filepath.Join(docs, "ops.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "helix.yaml")
	yaml := `helix: {data_dir: "` + filepath.Join(dir, "data") + `"}
pipelines:
  - id: docs
    source: file://` + docs + `
    steps:
      - rag-retrieve: {strategy: keyword, top_k: 1}
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := execute(t, "rag", "ingest", file, "docs"); code != 0 {
		t.Fatalf("ingest: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := execute(t, "rag", "query", "-o", "json", file, "docs", "compare")
	if code != 0 {
		t.Fatalf("query: %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, `\u00`) || !strings.Contains(out, "a < b && b > c") {
		t.Fatalf("want <, > and & unescaped, got:\n%s", out)
	}
	var res pipeline.JSONOutput
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Results) != 1 {
		t.Fatalf("not the JSON result (%v):\n%s", err, out)
	}
}
