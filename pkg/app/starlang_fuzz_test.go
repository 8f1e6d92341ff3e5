package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// starlangYAML exposes a workflow whose Starlang step does, depending on `mode`, what
// a careless script might do with a caller's arguments: decode them as JSON, repeat
// a string, recurse, format the payload, build a list, fail with the caller's text.
const starlangYAML = `
helix:
  starlang_max_memory: 4MiB
  mcp:
    servers:
      - enabled: true
        transport: http
        addr: "127.0.0.1:0"
        name: starlang-fuzz
workflows:
  - id: stress
    description: "Runs Starlang on arbitrary arguments"
    trigger: direct://stress
    steps:
      - transform:
          starlang: |
            def depth(k):
                return depth(k - 1) + 1 if k > 0 else 0
            s = payload.get("s", "")
            n = payload.get("n", 0)
            mode = payload.get("mode", 0)
            out = None
            if mode == 0:
                out = json.decode(s)
            elif mode == 1:
                out = len(s * n)
            elif mode == 2:
                out = depth(n)
            elif mode == 3:
                out = str(payload)
            elif mode == 4:
                out = [s] * n
            elif mode == 5:
                fail(s)
            {"out": out}
  - id: boom
    trigger: direct://boom
    steps:
      - transform: {starlang: 'fail("boom")'}
  - id: http-echo
    trigger: http-server://127.0.0.1:0/echo
    steps:
      - transform: {starlang: '{"size": len(str(payload))}'}
  - id: http-boom
    trigger: http-server://127.0.0.1:0/boom
    steps:
      - transform:
          starlang: |
            x = 1
            fail("boom")
`

// stressClient is an MCP client session that reconnects when the server refused a
// request at the protocol level (the go-sdk client closes its session on such an
// answer), so that one server and one client serve every fuzzing iteration.
type stressClient struct {
	endpoint string
	cs       *sdk.ClientSession
}

func (c *stressClient) connect(tb testing.TB) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "starlang-fuzz", Version: "1"}, nil)
	// 2025-11-25: callStress checks that the server still answers with ping,
	// which 2026-07-28 removed.
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: c.endpoint, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	if c.cs != nil {
		_ = c.cs.Close()
	}
	c.cs = cs
	return nil
}

// starlangServer builds and starts starlangYAML for tb and returns the app and a
// client; both are closed when tb ends.
func starlangServer(tb testing.TB) (*app.App, *stressClient) {
	tb.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte(starlangYAML))
	if err != nil {
		tb.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		tb.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = a.Stop(ctx)
	})
	addr := a.MCPServers().Addr("starlang-fuzz")
	if addr == nil {
		tb.Fatal("server starlang-fuzz is not listening")
	}
	c := &stressClient{endpoint: "http://" + addr.String() + "/mcp"}
	if err := c.connect(tb); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.cs.Close() })
	return a, c
}

// callStress calls a tool and checks what must always hold: the server answers (a
// result, or a protocol-level refusal), it still serves a session afterwards, and a
// tool error names no file or YAML position.
func callStress(tb testing.TB, c *stressClient, tool string, args any) (string, bool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		// Refused at the protocol level (deeper than JSON-RPC allows, say): the
		// server must still be there for a new session.
		if perr := c.cs.Ping(ctx, nil); perr != nil {
			if cerr := c.connect(tb); cerr != nil {
				tb.Fatalf("server gone after %s (call error %v): %v", tool, err, cerr)
			}
		}
		if perr := c.cs.Ping(ctx, nil); perr != nil {
			tb.Fatalf("server does not answer after %s (call error %v): %v", tool, err, perr)
		}
		return err.Error(), true
	}
	var text strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError && strings.Contains(text.String(), "helix.yaml:") {
		if sent, _ := json.Marshal(args); !strings.Contains(string(sent), "helix.yaml") {
			tb.Fatalf("tool error leaks a position or step: %.300q", text.String())
		}
	}
	return text.String(), res.IsError
}

func nested(depth int) any {
	var v any = "leaf"
	for range depth {
		v = []any{map[string]any{"a": v}}
	}
	return v
}

// FuzzStarlangToolCall feeds arbitrary arguments, huge and deep ones included,
// through a real MCP tools/call to a Starlang step. Whatever they are, the process
// must stay up and answer. One server serves every iteration.
//
//	go test -run=^$ -fuzz=FuzzStarlangToolCall -fuzztime=10s ./pkg/app
func FuzzStarlangToolCall(f *testing.F) {
	// Deep enough to be refused, small enough to keep iterations cheap (the 1.5
	// million levels of the issue are in TestDeepJSONArgumentIsAToolError).
	f.Add(strings.Repeat("[", 20_000), int64(0), int64(0), uint16(0), []byte(nil))
	f.Add(strings.Repeat(`{"a":`, 5_000), int64(0), int64(0), uint16(0), []byte(nil))
	f.Add("x", int64(1)<<40, int64(1), uint16(0), []byte(nil))
	f.Add("0123456789012345678901234567890", int64(1)<<27, int64(1), uint16(0), []byte(nil))
	f.Add("", int64(100_000), int64(2), uint16(0), []byte(nil))
	f.Add("", int64(0), int64(3), uint16(599), []byte(nil))
	f.Add("", int64(0), int64(3), uint16(450), []byte(nil))
	f.Add("abc", int64(1)<<30, int64(4), uint16(0), []byte(nil))
	f.Add("boom", int64(0), int64(5), uint16(0), []byte(`{"k":[1,2,{"x":null}]}`))
	f.Add(`[1, 2, {"a": "b"}]`, int64(3), int64(0), uint16(3), []byte(`[[[[[[`))
	// One server per process (the fuzzing workers each run this function), kept for
	// every iteration.
	_, cs := starlangServer(f)
	f.Fuzz(func(t *testing.T, s string, n, mode int64, depth uint16, raw []byte) {
		// Arguments nest up to 1,200 levels: past 1,000 the server refuses the
		// message as JSON-RPC (as the go-sdk does); the go-sdk client cannot even
		// send one deeper than encoding/json's 10,000.
		args := map[string]any{"s": s, "n": n, "mode": (mode%6 + 6) % 6, "deep": nested(int(depth % 600))}
		if len(raw) < 4096 && json.Valid(raw) {
			args["raw"] = json.RawMessage(raw)
		}
		callStress(t, cs, "stress", args)
	})
}

func TestDeepJSONArgumentIsAToolError(t *testing.T) {
	t.Parallel()
	_, cs := starlangServer(t)
	for _, s := range []string{strings.Repeat("[", 1_500_000), strings.Repeat(`{"a":`, 200_000)} {
		text, isErr := callStress(t, cs, "stress", map[string]any{"s": s, "mode": 0})
		if !isErr || !strings.Contains(text, "nested deeper than 1000 levels") {
			t.Errorf("deep json.decode: %v %.200q", isErr, text)
		}
	}
}

// A request body nested deeper than Starlang's bound (encoding/json reads up to
// 10,000 levels) is an error answer, not a crash.
func TestDeepHTTPBodyIsAnErrorAnswer(t *testing.T) {
	t.Parallel()
	a, _ := starlangServer(t)
	deep, _ := json.Marshal(nested(3000))
	status, body := post(t, httpBase(t, a, "127.0.0.1:0")+"/echo", string(deep))
	if status != 500 || !strings.Contains(body, "nested deeper than 1000 levels") || strings.Contains(body, "helix.yaml") {
		t.Errorf("status %d body %.300q", status, body)
	}
}

func TestStarlangMaxMemoryFromYAML(t *testing.T) {
	t.Parallel()
	_, cs := starlangServer(t)
	text, isErr := callStress(t, cs, "stress", map[string]any{"s": "0123456789", "n": 1 << 20, "mode": 1})
	if !isErr || !strings.Contains(text, "4 MiB") || !strings.Contains(text, "starlang_max_memory") {
		t.Errorf(`"x" * n over the 4MiB of the YAML: %v %.300q`, isErr, text)
	}
	if text, isErr := callStress(t, cs, "stress", map[string]any{"s": "0123456789", "n": 1 << 10, "mode": 1}); isErr || text != `{"out":10240}` {
		t.Errorf("10 KiB: %v %q", isErr, text)
	}
	text, isErr = callStress(t, cs, "stress", map[string]any{"n": 100_000, "mode": 2})
	if !isErr || !strings.Contains(text, "too much recursion") {
		t.Errorf("deep recursion: %v %.300q", isErr, text)
	}
}

// fail("boom") reaches an MCP client as "boom": no file, line or step.
func TestStarlangFailReachesClientAsItsMessage(t *testing.T) {
	t.Parallel()
	_, cs := starlangServer(t)
	if text, isErr := callStress(t, cs, "boom", map[string]any{}); !isErr || text != "boom" {
		t.Errorf("boom tool: isError %v, text %q, want exactly boom", isErr, text)
	}
	if text, isErr := callStress(t, cs, "stress", map[string]any{"s": "custom failure", "mode": 5}); !isErr || text != "custom failure" {
		t.Errorf("stress fail: isError %v, text %q", isErr, text)
	}
}

// An http-server:// workflow that fails answers 500 with the message only.
func TestHTTPServerErrorHasNoPosition(t *testing.T) {
	t.Parallel()
	a, _ := starlangServer(t)
	status, body := post(t, httpBase(t, a, "127.0.0.1:0")+"/boom", `{}`)
	if status != 500 || body != `{"error":"boom"}` {
		t.Errorf("status %d body %q, want 500 {\"error\":\"boom\"}", status, body)
	}
}
