package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
)

// These tests drive the helix binary with the official MCP peers installed by
// scripts/setup-tools.sh: the Inspector CLI and the conformance suite.

// exampleWithAddr copies examples/mcp-server.yaml into a temp dir with its listen
// address replaced (examples stay plain YAML; the port must be free here), or with
// the transport switched to stdio when addr is "".
func exampleWithAddr(t *testing.T, addr string) string {
	t.Helper()
	root, err := testtools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "examples", "mcp-server.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	const exampleAddr = `addr: "127.0.0.1:${env:MCP_SERVER_PORT:-3000}"`
	if !strings.Contains(text, exampleAddr) {
		t.Fatalf("examples/mcp-server.yaml no longer contains %s; update this test", exampleAddr)
	}
	if addr == "" {
		var kept []string
		for _, line := range strings.Split(text, "\n") {
			if strings.TrimSpace(line) != exampleAddr {
				kept = append(kept, line)
			}
		}
		text = strings.Replace(strings.Join(kept, "\n"), "transport: http", "transport: stdio", 1)
	} else {
		text = strings.Replace(text, exampleAddr, fmt.Sprintf("addr: %q", addr), 1)
	}
	file := filepath.Join(t.TempDir(), "mcp-server.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// serveExample runs `helix mcp serve` on the example at a free loopback port, with
// the workflows of the extra files beside it, and returns the port; at cleanup it
// sends SIGTERM and requires a clean exit (a data race in the -race binary would
// exit 66).
func serveExample(t *testing.T, extra ...string) int {
	t.Helper()
	helix := testtools.HelixBinary(t)
	port := testtools.FreePort(t)
	args := append([]string{"mcp", "serve", exampleWithAddr(t, fmt.Sprintf("127.0.0.1:%d", port))}, extra...)
	cmd := exec.Command(helix, args...)
	var stderr testtools.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("helix mcp serve: %v\n%s", err, stderr.String())
			}
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
			t.Errorf("helix mcp serve did not stop on SIGTERM\n%s", stderr.String())
		}
	})
	testtools.WaitForTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 60*time.Second)
	return port
}

// inspector runs the MCP Inspector CLI and returns its stdout.
func inspector(t *testing.T, args ...string) string {
	t.Helper()
	node := testtools.Node(t)
	bin := testtools.NPMBin(t, "inspector")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{bin, "--cli"}, args...)...)
	// The inspector keeps a catalog under $HOME; keep it out of the real home.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector %v: %v\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func checkInspectorTools(t *testing.T, out string) {
	t.Helper()
	var res struct {
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("tools/list output %q: %v", out, err)
	}
	var names []string
	for _, tl := range res.Result.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "calculate_tax,greet" {
		t.Fatalf("tools %v", names)
	}
}

func checkInspectorGreet(t *testing.T, out string) {
	t.Helper()
	var res struct {
		Result struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("tools/call output %q: %v", out, err)
	}
	if res.Result.IsError || len(res.Result.Content) != 1 || res.Result.Content[0].Text != "Hello, Ada!" {
		t.Fatalf("greet result %s", out)
	}
}

func TestInspectorAgainstHelix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the helix binary and Node")
	}
	port := serveExample(t)
	for _, tc := range []struct{ transport, url string }{
		{"http", fmt.Sprintf("http://127.0.0.1:%d/mcp", port)},
		{"sse", fmt.Sprintf("http://127.0.0.1:%d/sse", port)},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			checkInspectorTools(t, inspector(t, "--transport", tc.transport, "--server-url", tc.url, "--method", "tools/list", "--format", "json"))
			checkInspectorGreet(t, inspector(t, "--transport", tc.transport, "--server-url", tc.url,
				"--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada", "--format", "json"))
		})
	}
	t.Run("stdio", func(t *testing.T) {
		// The inspector launches helix itself; it exits when the inspector closes stdin.
		helix := testtools.HelixBinary(t)
		file := exampleWithAddr(t, "")
		checkInspectorTools(t, inspector(t, "--method", "tools/list", "--format", "json", "--", helix, "mcp", "serve", file))
		checkInspectorGreet(t, inspector(t, "--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada",
			"--format", "json", "--", helix, "mcp", "serve", file))
	})
}

// conformanceScenarios are the server scenarios of the official suite that Helix
// passes: those that need no reference tool, those whose tools
// testdata/conformance-tools.yaml provides as YAML workflows (progress, logging),
// and those whose resources, prompts and completions testdata/conformance-resources.yaml
// declares.
var conformanceScenarios = []string{
	"server-initialize", "ping", "logging-set-level", "tools-list", "resources-list",
	"prompts-list", "server-sse-multiple-streams", "dns-rebinding-protection",
	"tools-call-with-progress", "tools-call-with-logging",
	// testdata/conformance-resources.yaml
	"resources-read-text", "resources-read-binary", "resources-templates-read",
	"resources-subscribe", "resources-unsubscribe", "prompts-get-simple", "prompts-get-with-args",
	"prompts-get-embedded-resource", "prompts-get-with-image", "completion-complete",
	// testdata/conformance-content.yaml
	"tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
	"tools-call-mixed-content", "tools-call-error",
	// testdata/conformance-client-requests.yaml
	"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums",
}

func TestConformanceSuiteAgainstHelix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the helix binary and Node")
	}
	node := testtools.Node(t)
	suite := testtools.NPMBin(t, "conformance")
	port := serveExample(t, filepath.Join("testdata", "conformance-tools.yaml"), filepath.Join("testdata", "conformance-resources.yaml"),
		filepath.Join("testdata", "conformance-content.yaml"), filepath.Join("testdata", "conformance-client-requests.yaml"))
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	for _, scenario := range conformanceScenarios {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
			defer cancel()
			out := t.TempDir()
			cmd := exec.CommandContext(ctx, node, suite, "server", "--url", url, "--scenario", scenario, "-o", out)
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "NO_COLOR=1")
			output, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("conformance %s: %v\n%s", scenario, err, output)
			}
			checks := readConformanceChecks(t, out)
			if len(checks) == 0 {
				t.Fatalf("conformance %s wrote no checks\n%s", scenario, output)
			}
			for _, c := range checks {
				if c.Status != "SUCCESS" && c.Status != "INFO" {
					t.Errorf("%s: check %s: %s %s", scenario, c.ID, c.Status, c.ErrorMessage)
				}
			}
		})
	}
}

type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

func readConformanceChecks(t *testing.T, dir string) []conformanceCheck {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("checks.json under %s: %v %v", dir, files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var checks []conformanceCheck
	if err := json.Unmarshal(data, &checks); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	return checks
}
