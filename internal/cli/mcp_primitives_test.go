package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
)

// startYAMLServer runs the MCP servers of file (a Helix YAML file) in this process
// with env set, and returns the bound address of each server by name.
func startYAMLServer(t *testing.T, file string, env map[string]string) map[string]string {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	a, _, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler), ManagementAddr: "127.0.0.1:0"}, file)
	if err != nil {
		t.Fatalf("load %s: %v", file, err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatalf("start %s: %v", file, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = a.Stop(ctx)
	})
	addrs := map[string]string{}
	comp := mcpserver.Of(a.Context())
	for _, s := range comp.Servers() {
		if addr := comp.Addr(s.ID); addr != nil {
			addrs[s.Name] = addr.String()
		}
	}
	return addrs
}

// startConformance serves examples/conformance.yaml (tools, resources, a resource
// template, prompts) and returns the address of its server.
func startConformance(t *testing.T) string {
	t.Helper()
	// The durable store of its tasks fixtures in the test's directory, not in the source tree.
	addrs := startYAMLServer(t, "../../examples/conformance.yaml", map[string]string{"CONFORMANCE_PORT": "0", "CONFORMANCE_DATA_DIR": t.TempDir()})
	addr := addrs["conformance"]
	if addr == "" {
		t.Fatalf("no conformance server in %v", addrs)
	}
	return addr
}

func TestMCPInspectListsResourcesTemplatesAndPrompts(t *testing.T) {
	addr := startConformance(t)
	code, stdout, stderr := execute(t, "mcp", "inspect", addr)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, want := range []string{
		"Server: conformance 1.0.0 (protocol ",
		"Resources: 6\n",
		"test://static-text", "A static text resource",
		"test://static-binary",
		"Resource templates: 1\n",
		"test://template/{id}/data",
		"Prompts: 5\n",
		"test_prompt_with_arguments", "arg1*, arg2*",
		"test_simple_prompt",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

func TestMCPInspectJSON(t *testing.T) {
	addr := startConformance(t)
	code, stdout, stderr := execute(t, "mcp", "inspect", "-o", "json", addr)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	var got struct {
		Endpoint        string                `json:"endpoint"`
		ServerInfo      struct{ Name string } `json:"serverInfo"`
		ProtocolVersion string                `json:"protocolVersion"`
		Capabilities    map[string]any        `json:"capabilities"`
		Tools           []map[string]any      `json:"tools"`
		Resources       []struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
		} `json:"resources"`
		ResourceTemplates []struct {
			URITemplate string `json:"uriTemplate"`
		} `json:"resourceTemplates"`
		Prompts []struct {
			Name      string `json:"name"`
			Arguments []struct {
				Name     string `json:"name"`
				Required bool   `json:"required"`
			} `json:"arguments"`
		} `json:"prompts"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout)
	}
	if got.ServerInfo.Name != "conformance" || got.ProtocolVersion == "" || got.Capabilities["resources"] == nil || got.Capabilities["prompts"] == nil {
		t.Errorf("serverInfo/protocolVersion/capabilities: %+v", got)
	}
	if len(got.Tools) == 0 || len(got.Resources) != 6 || len(got.ResourceTemplates) != 1 || len(got.Prompts) != 5 {
		t.Errorf("got %d tools, %d resources, %d templates, %d prompts", len(got.Tools), len(got.Resources), len(got.ResourceTemplates), len(got.Prompts))
	}
	if got.ResourceTemplates[0].URITemplate != "test://template/{id}/data" {
		t.Errorf("template %+v", got.ResourceTemplates)
	}
	if strings.Contains(stdout, `\u003c`) || strings.Contains(stdout, `\u0026`) {
		t.Errorf("HTML escapes in %s", stdout)
	}
	code, _, stderr = execute(t, "mcp", "inspect", "-o", "yaml", addr)
	if code != ExitConfig || !strings.Contains(stderr, "use text or json") {
		t.Errorf("bad -o: exit %d stderr %q", code, stderr)
	}
}

func TestMCPRead(t *testing.T) {
	addr := startConformance(t)
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")
	if len(png) != 69 {
		t.Fatalf("the fixture's PNG has %d bytes", len(png))
	}

	code, stdout, stderr := execute(t, "mcp", "read", addr, "test://static-text")
	if code != ExitOK || stdout != "This is the content of the static text resource.\n" {
		t.Fatalf("text: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "read", addr, "test://template/123/data")
	if code != ExitOK || !strings.Contains(stdout, `"Data for ID: 123"`) {
		t.Fatalf("template: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "read", addr, "test://static-binary")
	if code != ExitOK || stdout != "test://static-binary: image/png, 69 bytes of binary data (use --out FILE to save it, or -o json)\n" {
		t.Fatalf("blob summary: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	out := filepath.Join(t.TempDir(), "pixel.png")
	code, stdout, stderr = execute(t, "mcp", "read", addr, "test://static-binary", "--out", out)
	data, _ := os.ReadFile(out)
	if code != ExitOK || string(data) != string(png) || !strings.Contains(stderr, "wrote 69 bytes to "+out) || stdout != "" {
		t.Fatalf("--out: exit %d stdout %q stderr %q, file %d bytes", code, stdout, stderr, len(data))
	}
	code, stdout, stderr = execute(t, "mcp", "read", addr, "test://static-binary", "-o", "json")
	var res struct {
		Contents []struct{ URI, MIMEType, Blob string } `json:"contents"`
	}
	if code != ExitOK || json.Unmarshal([]byte(stdout), &res) != nil || len(res.Contents) != 1 || res.Contents[0].Blob == "" {
		t.Fatalf("-o json: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "read", addr, "test://static-txt")
	if code != ExitRuntime || stdout != "" || !strings.Contains(stderr, "test://static-txt") || !strings.Contains(stderr, `did you mean "test://static-text"?`) {
		t.Fatalf("unknown: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, _, stderr = execute(t, "mcp", "read", addr)
	if code != ExitConfig || !strings.Contains(stderr, "usage: helix mcp read") {
		t.Fatalf("no URI: exit %d stderr %q", code, stderr)
	}
	code, _, stderr = execute(t, "mcp", "read", addr, "test://static-text", "--out", filepath.Join(t.TempDir(), "no", "such", "dir", "f"))
	if code != ExitRuntime || !strings.Contains(stderr, "--out") {
		t.Fatalf("bad --out: exit %d stderr %q", code, stderr)
	}
}

func TestMCPPrompt(t *testing.T) {
	addr := startConformance(t)
	code, stdout, stderr := execute(t, "mcp", "prompt", addr, "test_prompt_with_arguments", "arg1=a b", "arg2=2")
	if code != ExitOK || stdout != "user: Prompt with arguments: arg1='a b', arg2='2'\n" {
		t.Fatalf("args: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "prompt", addr, "test_prompt_with_image")
	if code != ExitOK || stdout != "user: [image image/png, 69 bytes]\nuser: Please analyze the image above.\n" {
		t.Fatalf("image: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "prompt", addr, "test_prompt_with_embedded_resource", "resourceUri=test://example-resource")
	if code != ExitOK || !strings.HasPrefix(stdout, "user: [resource test://example-resource]\nEmbedded resource content for testing.\n") {
		t.Fatalf("resource: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "prompt", addr, "test_simple_prompt", "-o", "json")
	var res struct {
		Messages []struct {
			Role    string
			Content struct{ Type, Text string }
		}
	}
	if code != ExitOK || json.Unmarshal([]byte(stdout), &res) != nil || len(res.Messages) != 1 || res.Messages[0].Content.Text != "This is a simple prompt for testing." {
		t.Fatalf("-o json: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "prompt", addr, "test_simple_promt")
	if code != ExitRuntime || stdout != "" || !strings.Contains(stderr, `did you mean "test_simple_prompt"?`) {
		t.Fatalf("unknown: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, _, stderr = execute(t, "mcp", "prompt", addr, "test_prompt_with_arguments", "arg1")
	if code != ExitConfig || !strings.Contains(stderr, `argument "arg1": use key=value`) {
		t.Fatalf("bad pair: exit %d stderr %q", code, stderr)
	}
	code, _, stderr = execute(t, "mcp", "prompt", addr, "test_prompt_with_arguments", "--json", `{"arg1":1}`)
	if code != ExitConfig || !strings.Contains(stderr, "--json") {
		t.Fatalf("non-string --json: exit %d stderr %q", code, stderr)
	}
}

// Over --stdio (a Helix server started for the command) call shows progress and
// log messages, read prints a resource and prompt a prompt, as over HTTP.
func TestMCPStdioCallReadPrompt(t *testing.T) {
	t.Parallel()
	helix := testtools.HelixBinary(t)
	file := filepath.Join(t.TempDir(), "stdio.yaml")
	yaml := `helix:
  management: {enabled: false}
  mcp:
    servers:
      - {enabled: true, transport: stdio, name: stdio-demo}
resources:
  - {uri: "app://motd", name: motd, text: "Hello <world> & all"}
prompts:
  - name: greet
    arguments: [{name: who, required: true}]
    messages: [{role: user, content: "Greet ${args.who}"}]
workflows:
  - id: count
    trigger: direct://count
    steps:
      - transform:
          starlang: |
            log("info", "counting")
            progress(1, 2, "first")
            progress(2, 2, "second")
            "counted"
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	server := helix + " mcp serve --log-level error '" + file + "'"
	code, stdout, stderr := execute(t, "mcp", "call", "--stdio", server, "count")
	if code != ExitOK || stdout != "counted\n" || stderr != "info count: counting\nprogress 1/2 first\nprogress 2/2 second\n" {
		t.Errorf("call: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "inspect", "--stdio", server)
	if code != ExitOK || !strings.HasPrefix(stdout, "MCP Server: stdio: "+server+"\nServer: stdio-demo ") ||
		!strings.Contains(stdout, "\napp://motd         motd       text/plain\n") || !strings.Contains(stdout, "\ngreet   who*\n") {
		t.Errorf("inspect: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "read", "--stdio", server, "app://motd")
	if code != ExitOK || stdout != "Hello <world> & all\n" {
		t.Errorf("read: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "prompt", "--stdio", server, "greet", "who=Ada")
	if code != ExitOK || stdout != "user: Greet Ada\n" {
		t.Errorf("prompt: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, _, stderr = execute(t, "mcp", "read", "--stdio", server, "app://mtod")
	if code != ExitRuntime || !strings.Contains(stderr, `did you mean "app://motd"?`) {
		t.Errorf("unknown: exit %d stderr %q", code, stderr)
	}
}

// Bad command lines of read and prompt are refused before anything is connected.
func TestMCPReadPromptBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"read", "127.0.0.1:1", "x://a", "--out", "f", "-o", "json"}, "--out and --output json: choose one"},
		{[]string{"read", "127.0.0.1:1", "x://a", "x://b"}, "usage: helix mcp read URL URI"},
		{[]string{"read", "--stdio", "server", "127.0.0.1:1", "x://a"}, "usage: helix mcp read"},
		{[]string{"read", "--env", "A=1", "127.0.0.1:1", "x://a"}, "--env applies to --stdio servers"},
		{[]string{"read", "ftp://x", "x://a"}, "use host:port"},
		{[]string{"read", "127.0.0.1:1", "x://a", "-o", "xml"}, "use text or json"},
		{[]string{"prompt"}, "usage: helix mcp prompt URL NAME"},
		{[]string{"prompt", "127.0.0.1:1"}, "usage: helix mcp prompt URL NAME"},
		{[]string{"prompt", "127.0.0.1:1", "p", "--json", "[1]"}, "--json must be a JSON object of strings"},
		{[]string{"prompt", "127.0.0.1:1", "p", "=v"}, `argument "=v": use key=value`},
		{[]string{"prompt", "--stdio", "'unterminated", "p"}, "unterminated"},
		{[]string{"prompt", "127.0.0.1:1", "p", "--header", "nocolon"}, `use "Name: value"`},
	} {
		code, stdout, stderr := execute(t, append([]string{"mcp"}, tc.args...)...)
		if code != ExitConfig || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d stdout %q stderr %q, want %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	code, _, stderr := execute(t, "mcp", "read", "127.0.0.1:1", "x://a")
	if code != ExitRuntime || !strings.Contains(stderr, "connection refused") {
		t.Errorf("unreachable: exit %d stderr %q", code, stderr)
	}
}
