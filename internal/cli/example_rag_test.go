package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// examples/rag.yaml runs as its header says, offline: `helix run` serves the pipeline as
// the MCP tool doc_search over the repository's docs folder (keyword retrieval, Helix's
// own store), and `helix rag ingest` / `helix rag query` answer without a server. The
// working directory is a temporary one, so the store lands there and not in the
// repository.
func TestRunRAGExample(t *testing.T) {
	docs, err := filepath.Abs("../../docs")
	if err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs("../../examples/rag.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	t.Setenv("RAG_DOCS", docs)
	mcpAddr := freeLocalPort(t, "RAG_MCP_PORT")

	code, out, errOut := execute(t, "rag", "ingest", example, "doc-search")
	if code != ExitOK || !strings.Contains(out, "0 failed") {
		t.Fatalf("rag ingest: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = execute(t, "rag", "query", example, "doc-search", "how do I reload without downtime")
	if code != ExitOK || !strings.HasPrefix(out, "[1] reload.md") {
		t.Fatalf("rag query: exit %d\n%s\n%s", code, out, errOut)
	}

	runExample(t, []string{example}, mcpAddr)
	eventually(t, 30*time.Second, func() string {
		code, out, errOut := execute(t, "mcp", "call", mcpAddr, "doc_search", "query=which Kafka SASL mechanisms are supported")
		if first, _, _ := strings.Cut(out, "\n"); code != ExitOK || !strings.HasPrefix(first, "[1] ") || !strings.Contains(first, "kafka.md (") {
			return fmt.Sprintf("mcp call doc_search: exit %d\n%s\n%s", code, out, errOut)
		}
		return ""
	})
}
