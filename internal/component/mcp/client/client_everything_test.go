package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// everythingPeer is a running @modelcontextprotocol/server-everything.
type everythingPeer struct {
	node, script string
	port         int
	cmd          *exec.Cmd
	done         chan struct{}
	out          *testtools.SyncBuffer
}

// everythingPaths locates Node 22 and the reference server's entry script.
func everythingPaths(t *testing.T) (node, script string) {
	t.Helper()
	node = testtools.Node(t)
	script = testtools.NPMBin(t, "mcp-server-everything")
	return node, script
}

// startEverything starts the reference server with the given transport (sse or
// streamableHttp) on port (0: a free one) and stops it when the test ends.
func startEverything(t *testing.T, transport string, port int) *everythingPeer {
	t.Helper()
	node, script := everythingPaths(t)
	if port == 0 {
		port = testtools.FreePort(t)
	}
	p := &everythingPeer{node: node, script: script, port: port}
	p.start(t, transport)
	t.Cleanup(p.kill)
	return p
}

func (p *everythingPeer) start(t *testing.T, transport string) {
	t.Helper()
	p.out = &testtools.SyncBuffer{}
	p.cmd = exec.Command(p.node, p.script, transport)
	p.cmd.Env = append(p.cmd.Environ(), "PORT="+strconv.Itoa(p.port))
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start server-everything %s: %v", transport, err)
	}
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(p.cmd, p.done)
	// Node starts slowly on a loaded machine: wait for the port or the process's exit.
	testtools.WaitForProcessTCP(t, p.addr(), p.done, p.out.String)
}

func (p *everythingPeer) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// kill stops the server and waits for it to exit (the port is free afterwards).
func (p *everythingPeer) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// clientHarness is an engine context with the mcp:// component and one workflow
// direct://call → target, with an error handler recording failures.
type clientHarness struct {
	hc      *engine.Context
	handled *recordingHandler
}

// recordingHandler is the workflow's error handler: it records what it saw and lets
// the error end the exchange.
type recordingHandler struct {
	mu   sync.Mutex
	errs []error
}

func (h *recordingHandler) HandleError(_ context.Context, ex *exchange.Exchange, _ engine.Processor, err error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, err)
	return err
}

func (h *recordingHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.errs)
}

func newClientHarness(t testing.TB, target string) *clientHarness {
	t.Helper()
	hc := engine.NewContext("mcp-client-test")
	hc.AddComponent("mcp", mcpclient.New())
	h := &clientHarness{hc: hc, handled: &recordingHandler{}}
	if err := hc.AddWorkflow(&engine.Workflow{
		ID:           "call",
		FromURI:      "direct://call",
		ToURIs:       []string{target},
		ErrorHandler: h.handled,
	}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := hc.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return h
}

// call sends body (and headers) through the workflow and returns the exchange.
func (h *clientHarness) call(t *testing.T, body any, headers map[string]any) (*exchange.Exchange, error) {
	t.Helper()
	ex := exchange.NewWithBody(exchange.InOut, body)
	for k, v := range headers {
		ex.In().SetHeader(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := h.hc.Send(ctx, "direct://call", ex)
	return ex, err
}

// everythingTargets returns, per transport, the mcp:// URI prefix (without tool) of a
// freshly started server-everything.
func everythingTargets(t *testing.T) map[string]string {
	t.Helper()
	node, script := everythingPaths(t)
	httpPeer := startEverything(t, "streamableHttp", 0)
	ssePeer := startEverything(t, "sse", 0)
	return map[string]string{
		// server-everything serves Streamable HTTP at /mcp: the address carries the path…
		"http": "mcp://" + httpPeer.addr() + "/mcp/%s",
		// …or leaves it out, as the spec writes it (mcp://host:port/tool): the client
		// finds /mcp itself.
		"http-no-path": "mcp://" + httpPeer.addr() + "/%s",
		// …and SSE at /sse, the client's default SSE path.
		"sse": "mcp://" + ssePeer.addr() + "/%s?transport=sse",
		// stdio: the address is the executable (node), args the script and transport.
		"stdio": "mcp://" + node + "/%s?transport=stdio&args=" + script + "&args=stdio",
	}
}

func TestClientAgainstServerEverything(t *testing.T) {
	t.Parallel()
	targets := everythingTargets(t)
	for _, transport := range []string{"http", "http-no-path", "sse", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			tmpl := targets[transport]

			t.Run("echo", func(t *testing.T) {
				h := newClientHarness(t, fmt.Sprintf(tmpl, "echo"))
				ex, err := h.call(t, `{"message":"hi"}`, nil)
				if err != nil {
					t.Fatalf("call: %v", err)
				}
				if got := ex.In().Body(); got != "Echo: hi" {
					t.Fatalf("body = %#v, want %q", got, "Echo: hi")
				}
				if got := ex.In().HeaderString(exchange.HeaderMcpIsError); got != "false" {
					t.Errorf("HelixMcpIsError = %q, want false", got)
				}
				if got := ex.In().HeaderString(exchange.HeaderMcpToolName); got != "echo" {
					t.Errorf("HelixMcpToolName = %q, want echo", got)
				}
				// A map body is sent as is, and the header overrides the URI's tool.
				ex, err = h.call(t, map[string]any{"a": 2, "b": 40}, map[string]any{exchange.HeaderMcpToolName: "get-sum"})
				if err != nil {
					t.Fatalf("call get-sum: %v", err)
				}
				if got := exchange.Stringify(ex.In().Body()); !strings.Contains(got, "42") {
					t.Fatalf("get-sum body = %q, want the sum 42", got)
				}
				if got := ex.In().HeaderString(exchange.HeaderMcpToolName); got != "get-sum" {
					t.Errorf("HelixMcpToolName = %q, want get-sum", got)
				}
				if n := h.handled.count(); n != 0 {
					t.Errorf("error handler ran %d times for successful calls", n)
				}
			})

			t.Run("structured", func(t *testing.T) {
				h := newClientHarness(t, fmt.Sprintf(tmpl, "get-structured-content"))
				ex, err := h.call(t, map[string]any{"location": "Chicago"}, nil)
				if err != nil {
					t.Fatalf("call: %v", err)
				}
				var weather struct {
					Temperature float64 `json:"temperature"`
					Conditions  string  `json:"conditions"`
				}
				body := exchange.Stringify(ex.In().Body())
				if err := json.Unmarshal([]byte(body), &weather); err != nil {
					t.Fatalf("body %q is not the weather JSON: %v", body, err)
				}
				if weather.Temperature != 36 || weather.Conditions == "" {
					t.Fatalf("body = %q, want Chicago's weather (36°C)", body)
				}
			})

			t.Run("unknown tool", func(t *testing.T) {
				h := newClientHarness(t, fmt.Sprintf(tmpl, "no-such-tool"))
				ex, err := h.call(t, "x", nil)
				if err == nil {
					t.Fatal("call of an unknown tool succeeded")
				}
				var te *mcpclient.ToolError
				if !errors.As(err, &te) {
					t.Fatalf("error %v (%T) is not a ToolError", err, err)
				}
				if got := ex.In().HeaderString(exchange.HeaderMcpIsError); got != "true" {
					t.Errorf("HelixMcpIsError = %q, want true", got)
				}
				if body := exchange.Stringify(ex.In().Body()); !strings.Contains(body, "no-such-tool") {
					t.Errorf("body = %q, want the server's message naming the tool", body)
				}
				if n := h.handled.count(); n != 1 {
					t.Errorf("error handler ran %d times, want 1", n)
				}
				if ex.Exception() == nil {
					t.Error("exchange has no exception")
				}
			})
		})
	}
}

func TestClientToolErrorResult(t *testing.T) {
	t.Parallel()
	// server-everything's get-sum rejects a non-number argument with isError (or a
	// protocol error, depending on the SDK version): either way the exchange fails.
	targets := everythingTargets(t)
	h := newClientHarness(t, fmt.Sprintf(targets["http"], "get-sum"))
	ex, err := h.call(t, map[string]any{"a": "x", "b": 1}, nil)
	if err == nil {
		t.Fatalf("get-sum with a string argument succeeded: %v", ex.In().Body())
	}
	if got := ex.In().HeaderString(exchange.HeaderMcpIsError); got != "true" {
		t.Errorf("HelixMcpIsError = %q, want true", got)
	}
	if body := exchange.Stringify(ex.In().Body()); body == "" {
		t.Error("empty body: want the error text")
	}
}

func TestClientStdioSubprocessEndsOnStop(t *testing.T) {
	// Not parallel: it counts this process's server-everything children.
	node, script := everythingPaths(t)
	hc := engine.NewContext("stdio-stop")
	hc.AddComponent("mcp", mcpclient.New())
	// get-env shows the env option reaching the subprocess.
	target := "mcp://" + node + "/get-env?transport=stdio&args=" + script + "&args=stdio&env=HELIX_STDIO_PROBE=present"
	if err := hc.AddWorkflow(&engine.Workflow{ID: "call", FromURI: "direct://call", ToURIs: []string{target}}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ex := exchange.NewWithBody(exchange.InOut, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := hc.Send(ctx, "direct://call", ex); err != nil {
		t.Fatalf("call: %v", err)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(exchange.Stringify(ex.In().Body())), &env); err != nil {
		t.Fatalf("get-env body is not JSON: %v", err)
	}
	if env["HELIX_STDIO_PROBE"] != "present" {
		t.Errorf("HELIX_STDIO_PROBE = %v, want present (env option)", env["HELIX_STDIO_PROBE"])
	}
	pids := childPIDs(t, node, script)
	if len(pids) != 1 {
		t.Fatalf("found %d server-everything stdio processes (%v), want 1", len(pids), pids)
	}
	if err := hc.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	for _, p := range pids {
		if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill -0: %v)", p, err)
		}
	}
}

// childPIDs lists this process's children running `node script stdio`.
func childPIDs(t *testing.T, node, script string) []int {
	t.Helper()
	out, err := exec.Command("ps", "-o", "pid=,ppid=,args=", "--ppid", strconv.Itoa(syscall.Getpid())).Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	var pids []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.Contains(line, script) || f[len(f)-1] != "stdio" {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestClientSurvivesServerRestart kills the server under a running workflow and starts
// it again on the same port (or, for stdio, kills the subprocess): the next call goes
// through on a new session without restarting the workflow. A call the restarted
// server refuses because it does not know the session (HTTP 404, or server-everything's
// 400 with a null-id "No valid session ID") was not processed and goes again on the
// new session.
func TestClientSurvivesServerRestart(t *testing.T) {
	// Not parallel: it counts this process's server-everything children.
	for _, tc := range []struct{ name, transport, target string }{
		{"http", "streamableHttp", "mcp://%s/mcp/echo"},
		{"sse", "sse", "mcp://%s/echo?transport=sse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer := startEverything(t, tc.transport, 0)
			h := newClientHarness(t, fmt.Sprintf(tc.target, peer.addr()))
			echo := func(msg string) (*exchange.Exchange, error) {
				return h.call(t, map[string]any{"message": msg}, nil)
			}
			if ex, err := echo("before"); err != nil || ex.In().Body() != "Echo: before" {
				t.Fatalf("first call: %v %v", ex.In().Body(), err)
			}

			// Restarted behind the client's back: the old session is unknown to the new
			// server (or its stream is gone), so the call re-opens the session once.
			peer.kill()
			peer.start(t, tc.transport)
			if ex, err := echo("restarted"); err != nil || ex.In().Body() != "Echo: restarted" {
				t.Fatalf("call after restart: %v %v\nserver output:\n%s", ex.In().Body(), err, peer.out)
			}

			peer.kill()
			// While the server is down a call fails (it does not hang) …
			if _, err := echo("down"); err == nil {
				t.Fatal("call with the server down succeeded")
			}
			peer.start(t, tc.transport)
			// … and once it is back the next call succeeds on a fresh session. The
			// failed call above started a backoff window (100ms) that the server's
			// start-up outlasts; should a loaded machine start it faster, the call
			// reports when it may retry, and the retry below waits for that.
			ex, err := echo("after")
			if err != nil && strings.Contains(err.Error(), "next attempt allowed") {
				time.Sleep(200 * time.Millisecond)
				ex, err = echo("after")
			}
			if err != nil {
				t.Fatalf("call after the server came back: %v\nserver output:\n%s", err, peer.out)
			}
			if got := ex.In().Body(); got != "Echo: after" {
				t.Fatalf("body after restart = %#v", got)
			}
		})
	}

	t.Run("stdio", func(t *testing.T) {
		node, script := everythingPaths(t)
		h := newClientHarness(t, "mcp://"+node+"/echo?transport=stdio&args="+script+"&args=stdio")
		if _, err := h.call(t, map[string]any{"message": "one"}, nil); err != nil {
			t.Fatalf("first call: %v", err)
		}
		pids := childPIDs(t, node, script)
		if len(pids) != 1 {
			t.Fatalf("found %d stdio servers, want 1", len(pids))
		}
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		ex, err := h.call(t, map[string]any{"message": "two"}, nil)
		if err != nil && strings.Contains(err.Error(), "not sent again") {
			// The call raced the kill: written to the pipe before the client saw the
			// subprocess die, it may have been read, so it is not sent again — the
			// next call starts a new subprocess.
			ex, err = h.call(t, map[string]any{"message": "two"}, nil)
		}
		if err != nil {
			t.Fatalf("call after the subprocess died: %v", err)
		}
		if got := ex.In().Body(); got != "Echo: two" {
			t.Fatalf("body = %#v", got)
		}
		if now := childPIDs(t, node, script); len(now) != 1 || now[0] == pids[0] {
			t.Fatalf("stdio servers after restart: %v (old %d), want one new", now, pids[0])
		}
	})
}

// errorsYAML is spec §10.2 against a real server: a failing mcp:// target either
// fails the exchange (the error handler's dead letter channel receives it) or, with
// throwExceptionOnFailure=false, lets the workflow's choice test HelixMcpIsError.
const errorsYAML = `
workflows:
  - id: call-unknown
    trigger: { uri: direct://call-unknown }
    error-handler:
      dead-letter-channel: direct://failed
    steps:
      - target: mcp://%[1]s/mcp/no-such-tool
      - set-body: { constant: "not reached" }

  - id: call-external
    trigger:
      uri: direct://call
    steps:
      - target: mcp://%[1]s/mcp/_unused?transport=http&throwExceptionOnFailure=false
      - choice:
          when:
            - starlang: |
                headers.get("HelixMcpIsError", "false") == "true"
              steps:
                - set-body:
                    starlang: '"MCP tool failed: " ++ payload'
          otherwise:
            steps:
              - set-body:
                  starlang: '"MCP tool succeeded: " ++ payload'
`

func TestClientErrorsInYAMLWorkflows(t *testing.T) {
	t.Parallel()
	peer := startEverything(t, "streamableHttp", 0)
	a, _, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler)}, writeYAML(t, fmt.Sprintf(errorsYAML, peer.addr())))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	dead := make(chan *exchange.Exchange, 1)
	if err := a.Context().AddWorkflow(&engine.Workflow{ID: "failed", FromURI: "direct://failed", Processors: []engine.Processor{
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error { dead <- ex.Copy(); return nil }),
	}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})

	// Default: the unknown tool fails the exchange; the error handler dead-letters it.
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"q": 1})
	err = a.Context().Send(ctx, "direct://call-unknown", ex)
	var te *mcpclient.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a ToolError", err)
	}
	if ex.In().HeaderString(exchange.HeaderMcpIsError) != "true" || !strings.Contains(exchange.Stringify(ex.In().Body()), "no-such-tool") {
		t.Fatalf("headers %v body %v", ex.In().Headers(), ex.In().Body())
	}
	select {
	case dl := <-dead:
		if msg := dl.In().HeaderString(exchange.HeaderExceptionMessage); !strings.Contains(msg, "no-such-tool") {
			t.Errorf("dead letter HelixExceptionMessage = %q", msg)
		}
		if got := dl.In().Body(); !reflect.DeepEqual(got, map[string]any{"q": 1}) {
			t.Errorf("dead letter body = %#v, want the original body", got)
		}
	case <-ctx.Done():
		t.Fatal("no dead letter")
	}

	// throwExceptionOnFailure=false: §10.2's choice sees HelixMcpIsError.
	for _, tc := range []struct {
		tool, want string
	}{
		{"no-such-tool", "MCP tool failed: "},
		{"echo", "MCP tool succeeded: Echo: hi"},
	} {
		ex := exchange.NewWithBody(exchange.InOut, map[string]any{"message": "hi"})
		ex.In().SetHeader(exchange.HeaderMcpToolName, tc.tool)
		if err := a.Context().Send(ctx, "direct://call", ex); err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		if got := exchange.Stringify(ex.In().Body()); !strings.HasPrefix(got, tc.want) {
			t.Fatalf("%s: body %q, want prefix %q", tc.tool, got, tc.want)
		}
	}
}
