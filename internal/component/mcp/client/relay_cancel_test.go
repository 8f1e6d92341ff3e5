package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// relayYAML is a Helix MCP server whose tool "relay" calls tool "slow" of another
// server through mcp://.
const relayYAML = `
helix:
  mcp:
    servers:
      - { enabled: true, transport: http, addr: "127.0.0.1:0", name: relay, workflows: [relay] }
workflows:
  - id: relay
    description: "Relay to the slow upstream"
    trigger: { uri: direct://relay }
    steps:
      - target: mcp://%s/mcp/slow?timeout=0
`

// TestRelayCancellationReachesUpstream: a client that cancels its tools/call of a
// relaying tool (the go-sdk client sends notifications/cancelled, as the TypeScript
// SDK does) cancels the mcp:// call the relay waits on, with and without a progress
// token (with one the Helix server takes the go-sdk path, not the fast path).
func TestRelayCancellationReachesUpstream(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 4)
	cancelled := make(chan struct{}, 4)
	up := slowUpstream("upstream", func() { started <- struct{}{} }, func() { cancelled <- struct{}{} })
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return up }, nil))
	t.Cleanup(hs.Close)
	relay := startYAMLApp(t, fmt.Sprintf(relayYAML, strings.TrimPrefix(hs.URL, "http://")))

	for _, withToken := range []bool{false, true} {
		t.Run(fmt.Sprintf("progressToken=%v", withToken), func(t *testing.T) {
			client := sdk.NewClient(&sdk.Implementation{Name: "canceller", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://" + serverAddr(t, relay, "relay") + "/mcp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			ctx, cancel := context.WithCancel(context.Background())
			params := &sdk.CallToolParams{Name: "relay", Arguments: map[string]any{}}
			if withToken {
				params.SetProgressToken("tok-1")
			}
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, params)
				done <- err
			}()
			select {
			case <-started:
			case <-time.After(testtools.StartupBound):
				t.Fatal("the upstream call did not start")
			}
			cancel() // the go-sdk client sends notifications/cancelled
			<-done
			select {
			case <-cancelled:
			case <-time.After(testtools.StartupBound):
				t.Fatal("the upstream call was not cancelled within 15s of the client's cancellation")
			}
		})
	}
}

// TestRelayCancellationTypeScriptSDK cancels with the TypeScript SDK's own client (an
// AbortSignal: it sends notifications/cancelled in a POST of its own), with and
// without a progress token (onprogress), and checks the relay's mcp:// call is
// cancelled.
func TestRelayCancellationTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node := testtools.Node(t)
	sdkDir := testtools.NPMPackageDir(t, "@modelcontextprotocol/sdk")
	started := make(chan struct{}, 4)
	cancelled := make(chan struct{}, 4)
	up := slowUpstream("upstream", func() { started <- struct{}{} }, func() { cancelled <- struct{}{} })
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return up }, nil))
	t.Cleanup(hs.Close)
	relay := startYAMLApp(t, fmt.Sprintf(relayYAML, strings.TrimPrefix(hs.URL, "http://")))
	endpoint := "http://" + serverAddr(t, relay, "relay") + "/mcp"
	// The same relay served over stdio by the helix binary, as Claude Desktop starts it.
	stdioYAML := filepath.Join(t.TempDir(), "relay-stdio.yaml")
	yml := strings.Replace(fmt.Sprintf(relayYAML, strings.TrimPrefix(hs.URL, "http://")),
		`{ enabled: true, transport: http, addr: "127.0.0.1:0", name: relay, workflows: [relay] }`,
		`{ enabled: true, transport: stdio, name: relay, workflows: [relay] }`, 1)
	if err := os.WriteFile(stdioYAML, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	helix := testtools.HelixBinary(t)
	script := filepath.Join(t.TempDir(), "cancel.mjs")
	esm := "file://" + filepath.ToSlash(filepath.Join(sdkDir, "dist", "esm"))
	if err := os.WriteFile(script, []byte(fmt.Sprintf(tsCancelScript, esm, esm, esm, esm)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		transport    string
		withProgress bool
	}{{"http", false}, {"http", true}, {"sse", false}, {"sse", true}, {"stdio", false}, {"stdio", true}} {
		t.Run(fmt.Sprintf("%s/progressToken=%v", c.transport, c.withProgress), func(t *testing.T) {
			ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
			defer stop()
			flag := "0"
			if c.withProgress {
				flag = "1"
			}
			args := []string{script, flag, endpoint}
			switch c.transport {
			case "sse":
				args = []string{script, flag, "sse+" + strings.TrimSuffix(endpoint, "/mcp") + "/sse"}
			case "stdio":
				args = []string{script, flag, helix, "mcp", "serve", stdioYAML}
			}
			cmd := exec.CommandContext(ctx, node, args...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out := &lockedBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-started:
			case <-time.After(testtools.StartupBound):
				_ = cmd.Process.Kill()
				t.Fatalf("the upstream call did not start; client output:\n%s", out.String())
			}
			if c.withProgress {
				// Cancel while the upstream's progress flows through the relay.
				testtools.Eventually(t, "progress to reach the client", func() bool { return strings.Contains(out.String(), "progress") })
			}
			_, _ = io.WriteString(stdin, "abort\n") // the client aborts its call
			select {
			case <-cancelled:
			case <-time.After(testtools.StartupBound):
				t.Errorf("the upstream call was not cancelled within 15s of the client's abort")
			}
			_ = stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("client: %v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), "ABORTED") {
				t.Errorf("the client's call was not aborted:\n%s", out.String())
			}
		})
	}
}

// tsCancelScript calls tool "relay" over Streamable HTTP (an URL), SSE (sse+URL) or
// stdio (a command)
// and aborts it when a line arrives on stdin.
const tsCancelScript = `
import { Client } from "%s/client/index.js";
import { StreamableHTTPClientTransport } from "%s/client/streamableHttp.js";
import { StdioClientTransport } from "%s/client/stdio.js";
import { SSEClientTransport } from "%s/client/sse.js";
const [withProgress, target, ...args] = process.argv.slice(2);
const client = new Client({ name: "ts-canceller", version: "1" });
await client.connect(target.startsWith("http")
  ? new StreamableHTTPClientTransport(new URL(target))
  : target.startsWith("sse+")
  ? new SSEClientTransport(new URL(target.slice(4)))
  : new StdioClientTransport({ command: target, args, stderr: "inherit" }));
const ac = new AbortController();
const opts = { signal: ac.signal, timeout: 120000 };
if (withProgress === "1") opts.onprogress = (p) => console.log("progress", p.progress);
const call = client.callTool({ name: "relay", arguments: {} }, undefined, opts);
process.stdin.once("data", () => ac.abort("user aborted"));
try { await call; console.log("RESULT"); } catch (e) { console.log("ABORTED", String(e)); }
// Stay connected until stdin closes: only notifications/cancelled may cancel the call,
// not a closed connection.
await new Promise((resolve) => process.stdin.once("end", resolve).resume());
await client.close();
`

// TestRelayCancellationByNotificationOnly cancels on the wire as the TypeScript SDK
// does, without Node: notifications/cancelled in a POST of its own while the call's
// POST stays open (the go-sdk client also drops the call's POST, which cancels by
// itself). The relay's mcp:// call must be cancelled, with and without a progress
// token (with one the call takes the go-sdk path, without it the fast path).
func TestRelayCancellationByNotificationOnly(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 4)
	cancelled := make(chan struct{}, 4)
	up := slowUpstream("upstream", func() { started <- struct{}{} }, func() { cancelled <- struct{}{} })
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return up }, nil))
	t.Cleanup(hs.Close)
	relay := startYAMLApp(t, fmt.Sprintf(relayYAML, strings.TrimPrefix(hs.URL, "http://")))
	endpoint := "http://" + serverAddr(t, relay, "relay") + "/mcp"

	for i, meta := range []string{``, `,"_meta":{"progressToken":"tok-1"}`} {
		t.Run(fmt.Sprintf("progressToken=%v", meta != ""), func(t *testing.T) {
			w := newWireSession(t, endpoint)
			id := 10 + i
			answered := make(chan string, 1)
			go func() {
				// The answer's headers may come only with the result: post in the background.
				resp, err := w.do(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"relay","arguments":{}%s}}`, id, meta))
				if err != nil {
					answered <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				answered <- fmt.Sprintf("%d %s", resp.StatusCode, b)
			}()
			select {
			case <-started:
			case <-time.After(testtools.StartupBound):
				t.Fatal("the upstream call did not start")
			}
			resp, err := w.do(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"user aborted"}}`, id))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("notifications/cancelled: status %d", resp.StatusCode)
			}
			select {
			case <-cancelled:
			case <-time.After(testtools.StartupBound):
				t.Fatal("the upstream call was not cancelled within 15s of notifications/cancelled")
			}
			select {
			case a := <-answered:
				// A cancelled call gets no result (MCP cancellation).
				if strings.Contains(a, `"result"`) {
					t.Errorf("the cancelled call was answered with a result: %s", a)
				}
			case <-time.After(testtools.StartupBound):
				t.Error("the cancelled call's POST was not finished within 15s")
			}
		})
	}
}

// wireSession is a Streamable HTTP session (protocol 2025-06-18) spoken by hand.
type wireSession struct {
	endpoint, id string
}

func newWireSession(t *testing.T, endpoint string) *wireSession {
	t.Helper()
	w := &wireSession{endpoint: endpoint}
	resp, err := w.do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ts-like","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	w.id = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || w.id == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, w.id)
	}
	if resp, err = w.do(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, w.endpoint, nil)
		req.Header.Set("Mcp-Session-Id", w.id)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return w
}

func (w *wireSession) do(body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, w.endpoint, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if w.id != "" {
		req.Header.Set("Mcp-Session-Id", w.id)
	}
	return http.DefaultClient.Do(req)
}

// lockedBuffer collects a subprocess's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// slowUpstream is an MCP server whose tool "slow" runs until its call is cancelled (or
// a minute passes), reporting progress every 50ms when the call asked for it (the
// relay passes that on to its own caller). onStart runs when a call begins, onCancel
// when its context ends.
func slowUpstream(name string, onStart, onCancel func()) *sdk.Server {
	up := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
	up.AddTool(&sdk.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			onStart()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			giveUp := time.After(60 * time.Second)
			for n := 1.0; ; n++ {
				select {
				case <-ctx.Done():
					onCancel()
					return nil, ctx.Err()
				case <-tick.C:
					if tok := req.Params.GetProgressToken(); tok != nil {
						_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: n})
					}
				case <-giveUp:
					return nil, ctx.Err()
				}
			}
		})
	return up
}
