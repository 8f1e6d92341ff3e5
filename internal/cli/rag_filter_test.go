package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// helix rag query --filter: the front matter's metadata selects passages; a
// bad filter is a usage error saying where; a pipeline whose filter needs a
// caller's principal answers no CLI query (it fails closed).
func TestRAGQueryFilter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"ops.md":     "---\nteam: ops\nyear: 2024\ntags: [pager, oncall]\n---\n# Restart\n\nRestart the service after the upgrade.\n",
		"billing.md": "---\nteam: billing\nyear: 2021\n---\n# Invoices\n\nRestart the invoice run after a failure.\n",
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
  - id: tenants
    source: file://` + docs + `
    steps:
      - rag-retrieve: {strategy: keyword, filter: {team: "${principal.claims.team}"}}
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"docs", "tenants"} {
		if code, out, errOut := execute(t, "rag", "ingest", file, id); code != 0 {
			t.Fatalf("ingest %s: %d\n%s\n%s", id, code, out, errOut)
		}
	}
	for _, c := range []struct{ filter, want string }{
		{`{"team": "ops"}`, "ops.md"},
		{`{"year": {"$lt": 2022}}`, "billing.md"},
		{`{"tags": "oncall"}`, "ops.md"},
		{`{"modified": {"$gte": "2000-01-01"}, "path": "billing.md"}`, "billing.md"},
	} {
		code, out, errOut := execute(t, "rag", "query", "--filter", c.filter, file, "docs", "restart")
		if code != 0 || !strings.HasPrefix(out, "[1] "+c.want) || strings.Contains(out, "[2]") {
			t.Errorf("--filter %s: %d\n%s\n%s", c.filter, code, out, errOut)
		}
	}
	for _, c := range []struct{ filter, want string }{
		{`{"year": {"$gte": "2020", "$bad": 1}}`, `--filter: filter.year.$bad: unknown operator "$bad"`},
		{`{"team": `, "--filter is not JSON"},
		{`["team"]`, "--filter must be a JSON object"},
	} {
		code, _, errOut := execute(t, "rag", "query", "--filter", c.filter, file, "docs", "restart")
		if code != ExitConfig || !strings.Contains(errOut, c.want) {
			t.Errorf("--filter %s: exit %d, %q; want %d and %q", c.filter, code, errOut, ExitConfig, c.want)
		}
	}
	code, out, errOut := execute(t, "rag", "query", file, "tenants", "restart")
	if code == 0 || !strings.Contains(errOut, "${principal.claims.team} is empty") {
		t.Errorf("a principal-bound pipeline from the CLI: %d %q %q", code, out, errOut)
	}
}
