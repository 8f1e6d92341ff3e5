package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag/pipeline"
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
	pr := pipeline.Progress{Result: pipeline.Result{Seen: 4, Ingested: 1, Skipped: 1}, Running: true, Current: "file:a.md"}
	got := progressBar("docs", pr, 1)
	if want := "docs / [============            ] 2/4 documents (1 unchanged, 0 failed) file:a.md"; got != want {
		t.Errorf("bar %q\nwant %q", got, want)
	}
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
