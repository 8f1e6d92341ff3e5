package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fencedBlock matches a fenced code block: its info string and its text.
var fencedBlock = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```")

// docFiles returns the YAML blocks of a Markdown file whose first line is a comment
// naming a file ("# order-total.yaml"), by that name.
func docFiles(t *testing.T, doc string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, m := range fencedBlock.FindAllStringSubmatch(string(src), -1) {
		first, _, _ := strings.Cut(m[2], "\n")
		if name, ok := strings.CutPrefix(first, "# "); m[1] == "yaml" && ok && strings.HasSuffix(name, ".yaml") {
			files[name] = m[2]
		}
	}
	return files
}

// docs/getting-started.md followed step by step with the files it prints: they
// validate, the webhook answers the documented total, the MCP server lists exactly the
// tool and `helix mcp call` answers as shown; the stdio file validates with the tool
// file; the Claude Desktop configuration is the JSON Claude expects. The ports the
// guide uses (8120, 8121) are replaced by free ones.
func TestGettingStartedAsWritten(t *testing.T) {
	files := docFiles(t, "../../docs/getting-started.md")
	guide, err := os.ReadFile("../../docs/getting-started.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	httpAddr, mcpAddr := freeLocalPort(t, "UNUSED_HTTP_PORT"), freeLocalPort(t, "UNUSED_MCP_PORT")
	ports := strings.NewReplacer("127.0.0.1:8120", httpAddr, "127.0.0.1:8121", mcpAddr)
	for _, name := range []string{"order-total.yaml", "webhook.yaml", "mcp-http.yaml", "mcp-stdio.yaml"} {
		text, ok := files[name]
		if !ok {
			t.Fatalf("getting-started.md has no block for %s", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(ports.Replace(text)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	for _, set := range [][]string{{"order-total.yaml", "webhook.yaml"}, {"order-total.yaml", "mcp-stdio.yaml"}} {
		if code, out, errOut := execute(t, append([]string{"validate"}, set...)...); code != ExitOK {
			t.Fatalf("validate %v: exit %d\n%s%s", set, code, out, errOut)
		}
	}

	runExample(t, []string{"order-total.yaml", "webhook.yaml", "mcp-http.yaml"}, httpAddr, mcpAddr)

	resp, err := http.Post("http://"+httpAddr+"/orders", "application/json",
		strings.NewReader(`{"items":[{"price":9.5,"qty":2},{"price":3}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"items":2,"total":22}` {
		t.Errorf("POST /orders = %d %s", resp.StatusCode, body)
	}

	code, out, errOut := execute(t, "mcp", "inspect", mcpAddr)
	if code != ExitOK || !strings.Contains(out, "Tools: 1\n") || !strings.Contains(out, "order_total  Total of an order") {
		t.Errorf("mcp inspect: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = execute(t, "mcp", "call", mcpAddr, "order_total", `items=[{"price":9.5,"qty":2}]`)
	if code != ExitOK || strings.TrimSpace(out) != `{"items":1,"total":19}` {
		t.Errorf("mcp call: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = execute(t, "mcp", "call", mcpAddr, "order_total")
	if code != 1 || !strings.Contains(errOut, "items") {
		t.Errorf("mcp call without items: exit %d, stderr %q", code, errOut)
	}

	var claude struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	for _, m := range fencedBlock.FindAllStringSubmatch(string(guide), -1) {
		if m[1] == "json" {
			if err := json.Unmarshal([]byte(m[2]), &claude); err != nil {
				t.Fatalf("Claude Desktop configuration: %v", err)
			}
		}
	}
	entry := claude.MCPServers["helix"]
	if !filepath.IsAbs(entry.Command) || len(entry.Args) != 4 || entry.Args[0] != "mcp" || entry.Args[1] != "serve" ||
		filepath.Base(entry.Args[2]) != "order-total.yaml" || filepath.Base(entry.Args[3]) != "mcp-stdio.yaml" {
		t.Errorf("Claude Desktop entry %+v", entry)
	}
}
