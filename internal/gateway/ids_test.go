package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
)

// rawIDPost posts one JSON-RPC body to the gateway server and returns the status
// and the body (a JSON answer or an SSE stream's data line).
func rawIDPost(t *testing.T, url, sid, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	s := string(b)
	if i := strings.Index(s, "data: "); i >= 0 {
		s = strings.TrimSpace(strings.SplitN(s[i+len("data: "):], "\n", 2)[0])
	}
	return resp.StatusCode, s, resp.Header
}

// Ids through a gateway: a client's fractional or 30-digit id is an invalid
// request (id null) for an upstream's tool, the gateway's list and ping alike,
// never answered under a truncated id; the largest int64 id of a call relayed
// to the upstream comes back exactly. Stateful and stateless.
func TestGatewayRequestIDs(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	for _, stateless := range []bool{false, true} {
		hc := engine.NewContext("gw")
		hc.SetLogger(slog.New(slog.DiscardHandler))
		g, err := gateway.New(gateway.Options{ServerID: "gw", Logger: slog.New(slog.DiscardHandler),
			Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
		if err != nil {
			t.Fatal(err)
		}
		comp := serveGateway(t, hc, g, mcpserver.Options{Stateless: stateless})
		url := "http://" + comp.Addr("gw").String() + "/mcp"
		sid := ""
		if !stateless {
			status, body, hdr := rawIDPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			sid = hdr.Get("Mcp-Session-Id")
			if status != http.StatusOK || sid == "" {
				t.Fatalf("initialize: %d %s", status, body)
			}
			if status, body, _ := rawIDPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
				t.Fatalf("initialized: %d %s", status, body)
			}
		}
		call := `"method":"tools/call","params":{"name":"a.echo","arguments":{"text":"x"}}`
		for _, id := range []string{"1.5", "123456789012345678901234567890"} {
			for _, rest := range []string{call, `"method":"tools/list"`, `"method":"ping"`} {
				body := `{"jsonrpc":"2.0","id":` + id + `,` + rest + `}`
				status, got, _ := rawIDPost(t, url, sid, body)
				var m struct {
					ID    json.RawMessage     `json:"id"`
					Error *struct{ Code int } `json:"error"`
				}
				if err := json.Unmarshal([]byte(got), &m); err != nil || status != http.StatusBadRequest || m.Error == nil ||
					m.Error.Code != -32600 || string(m.ID) != "null" {
					t.Errorf("stateless=%v %s: %d %s", stateless, body, status, got)
				}
			}
		}
		status, got, _ := rawIDPost(t, url, sid, `{"jsonrpc":"2.0","id":9223372036854775807,`+call+`}`)
		if status != http.StatusOK || !strings.Contains(got, `"id":9223372036854775807`) || !strings.Contains(got, "echo:x") {
			t.Errorf("stateless=%v, the largest int64 id: %d %s", stateless, status, got)
		}
	}
}

// A logging/setLevel with a level MCP does not define is refused at the
// gateway (Invalid Params naming the levels) and never relayed upstream; a
// defined level is relayed to the client's upstream session.
func TestGatewayRefusesUnknownLogLevel(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	a := startUpstream(t, "a", func(srv *sdk.Server) {
		echoServer(srv)
		srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
			return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
				//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed
				if p, ok := req.GetParams().(*sdk.SetLoggingLevelParams); ok && method == "logging/setLevel" {
					mu.Lock()
					seen = append(seen, string(p.Level))
					mu.Unlock()
				}
				return next(ctx, method, req)
			}
		})
	})
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	cs := connect(t, comp, "/mcp", "2025-11-25", nil)
	if _, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed
	err := cs.SetLoggingLevel(testCtx(t), &sdk.SetLoggingLevelParams{Level: "loudest"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "debug, info, notice, warning, error, critical, alert, emergency") {
		t.Errorf("loudest: %v", err)
	}
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed
	if err := cs.SetLoggingLevel(testCtx(t), &sdk.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	testtools.Eventually(t, "warning relayed upstream", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(seen, "warning")
	})
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(seen, "loudest") {
		t.Errorf("the upstream got level loudest: %v", seen)
	}
}
