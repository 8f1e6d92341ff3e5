package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/engine"
)

// These benchmarks put one tools/call of an echo tool through a real loopback
// Streamable HTTP exchange, from the same raw keep-alive JSON-RPC client, against
// three servers in this process: a plain net/http handler (the floor), the stock
// go-sdk handler and Helix's MCP server. Allocation figures include the client's
// share, which is the same for all three, so the differences are the servers'.
// The side-by-side script (scripts/bench-side-by-side.sh) measures the same over
// separate processes with CPU per call.

// limitHandler answers initialize and tools/call with the least work possible.
func limitHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result any
		switch req.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
				"serverInfo": map[string]any{"name": "limit", "version": "1"}}
		case "tools/call":
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": req.Params.Arguments.Text}}}
		default:
			result = map[string]any{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	})
}

func serve(b *testing.B, h http.Handler) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

func goSDKStock(b *testing.B) string {
	srv := sdk.NewServer(&sdk.Implementation{Name: "gosdk", Version: "1"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "echo"},
		func(_ context.Context, _ *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
	return serve(b, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
}

// helixServer serves the echo workflow with Streamable HTTP implementation impl
// (mcpserver.HTTPTransportHelix or mcpserver.HTTPTransportSDK); noFast turns off the
// transport's tools/call fast path (fastcall.go).
func helixServer(b *testing.B, stateless bool, impl string, noFast bool) string {
	hc := engine.NewContext("bench")
	hc.SetLogger(discardLogger())
	err := hc.AddWorkflow(testtools.EchoWorkflow())
	if err != nil {
		b.Fatal(err)
	}
	sc := mcpserver.New(hc)
	hc.AddComponent("mcp-server", sc)
	if err := sc.AddServer(mcpserver.Options{ID: "bench", Addr: "127.0.0.1:0", Stateless: stateless, HTTPTransport: impl,
		DisableFastToolCalls: noFast}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := hc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = hc.Stop(ctx) })
	return "http://" + sc.Addr("bench").String() + "/mcp"
}

// echoToolYAML is the configuration the side-by-side benchmark measures
// (bench/echo.yaml): a tools: entry with a declared input and one Starlang step,
// served by an mcps: entry. %s is the server's extra keys (stateless, transport).
const echoToolYAML = `
tools:
  - id: echo
    description: "Returns its text argument"
    input:
      text: { type: string, description: "Text to return", required: true }
    output:
      text: { type: string, description: "The same text" }
    steps:
      - transform:
          starlang: |
            {"text": payload["text"]}
mcps:
  - id: bench
    addr: "127.0.0.1:0"
    transport: http
    expose: [echo]
%s`

// helixYAMLServer serves echoToolYAML through the whole application (config,
// tool catalogue, input schema validation, exchange, Starlang step), as
// `helix mcp serve bench/echo.yaml` does. extra are more keys of the mcps entry.
func helixYAMLServer(b *testing.B, extra string) string {
	return helixYAMLServerWith(b, extra, app.Options{})
}

// helixYAMLServerWith is helixYAMLServer with more application options (tracing).
func helixYAMLServerWith(b *testing.B, extra string, opts app.Options) string {
	cfg, err := config.LoadBytes("helix.yaml", fmt.Appendf(nil, echoToolYAML, extra))
	if err != nil {
		b.Fatal(err)
	}
	opts.Logger, opts.ManagementAddr = discardLogger(), "127.0.0.1:0"
	a, err := app.Build(cfg, opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Stop(ctx) })
	return "http://" + a.MCPServerAddr("bench").String() + "/mcp"
}

// rawClient is a keep-alive JSON-RPC poster, like bench/mcpload's.
type rawClient struct {
	hc        *http.Client
	url, sess string
	stateless bool
	callBody  string // the tools/call to send; "" is echoCall
	// newEra sends callBody as a 2026-07-28 request: no session, that version in
	// MCP-Protocol-Version and the Mcp-Method/Mcp-Name headers the version asks
	// for (callBody carries the version's _meta itself).
	newEra bool
}

// echoCall is the benchmarks' tools/call.
const echoCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`

// tracedEchoCall is echoCall from a traced client: the caller's trace context in
// _meta, as Helix's mcp:// client sends it.
const tracedEchoCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},` +
	`"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`

func (c *rawClient) post(body string) (http.Header, string, error) {
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	switch {
	case c.newEra:
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
	case c.sess != "" || c.stateless:
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	if c.sess != "" {
		req.Header.Set("Mcp-Session-Id", c.sess)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return nil, "", fmt.Errorf("status %d: %s", resp.StatusCode, buf.String())
	}
	return resp.Header, buf.String(), err
}

func (c *rawClient) open() error {
	if c.stateless || c.newEra {
		return nil
	}
	h, _, err := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if err != nil {
		return err
	}
	c.sess = h.Get("Mcp-Session-Id")
	_, _, err = c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return err
}

// close ends the session (DELETE), so the server's session goroutines end before
// the package's leak check runs.
func (c *rawClient) close() {
	if c.sess == "" {
		return
	}
	req, err := http.NewRequest(http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", c.sess)
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if resp, err := c.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

func (c *rawClient) call() error {
	callBody := c.callBody
	if callBody == "" {
		callBody = echoCall
	}
	_, body, err := c.post(callBody)
	if err != nil {
		return err
	}
	if !strings.Contains(body, `"result"`) || strings.Contains(body, `"isError":true`) || !strings.Contains(body, "hello") {
		return fmt.Errorf("unexpected answer %q", body)
	}
	return nil
}

func benchServer(b *testing.B, url string, stateless bool) { benchCalls(b, url, stateless, echoCall) }

// benchCalls sends callBody to url from parallel keep-alive clients.
func benchCalls(b *testing.B, url string, stateless bool, callBody string) {
	benchClients(b, rawClient{url: url, stateless: stateless, callBody: callBody})
}

// benchClients runs copies of client from parallel keep-alive connections.
func benchClients(b *testing.B, client rawClient) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := client
		c.hc = &http.Client{Transport: tr}
		if err := c.open(); err != nil {
			b.Error(err)
			return
		}
		defer c.close()
		for pb.Next() {
			if err := c.call(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkToolsCallHTTP: one echo tools/call per operation over loopback HTTP.
func BenchmarkToolsCallHTTP(b *testing.B) {
	b.Run("limit", func(b *testing.B) { benchServer(b, serve(b, limitHandler()), false) })
	b.Run("gosdk-stock", func(b *testing.B) { benchServer(b, goSDKStock(b), false) })
	b.Run("helix", func(b *testing.B) { benchServer(b, helixServer(b, false, mcpserver.HTTPTransportHelix, false), false) })
	b.Run("helix-stateless", func(b *testing.B) { benchServer(b, helixServer(b, true, mcpserver.HTTPTransportHelix, false), true) })
	b.Run("helix-nofast", func(b *testing.B) { benchServer(b, helixServer(b, false, mcpserver.HTTPTransportHelix, true), false) })
	b.Run("helix-nofast-stateless", func(b *testing.B) {
		benchServer(b, helixServer(b, true, mcpserver.HTTPTransportHelix, true), true)
	})
	b.Run("helix-sdk", func(b *testing.B) { benchServer(b, helixServer(b, false, mcpserver.HTTPTransportSDK, false), false) })
	b.Run("helix-sdk-stateless", func(b *testing.B) { benchServer(b, helixServer(b, true, mcpserver.HTTPTransportSDK, false), true) })
	// The configuration of issue 17: a tools: entry with one Starlang step.
	b.Run("yaml", func(b *testing.B) { benchServer(b, helixYAMLServer(b, ""), false) })
	b.Run("yaml-stateless", func(b *testing.B) { benchServer(b, helixYAMLServer(b, "    stateless: true\n"), true) })
	// Admission control under its limit (one client): what a slot costs.
	b.Run("yaml-stateless-admission", func(b *testing.B) {
		benchServer(b, helixYAMLServer(b, "    stateless: true\n    admission: {max_running: 64}\n"), true)
	})
	b.Run("yaml-sdk", func(b *testing.B) { benchServer(b, helixYAMLServer(b, "    http_transport: sdk\n"), false) })
	// Tracing on (every span sampled, exported to nowhere), called by a traced
	// client: what tracing adds to the call above.
	b.Run("yaml-traced", func(b *testing.B) {
		benchCalls(b, helixYAMLServerWith(b, "", app.Options{SpanExporter: discardSpans{}}), false, tracedEchoCall)
	})
}

// newEraEchoCall is echoCall on protocol 2026-07-28: no session, so the request
// names its version and the client's capabilities and identity in _meta.
const newEraEchoCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`

// BenchmarkToolsCallEras: the echo tool of the yaml benchmarks called without a
// session on each protocol era, on a `stateless: true` server and on a default
// one, which answers both eras on its one URL. BENCHMARKS.md ("Both protocol
// eras on one endpoint") compares them side by side.
func BenchmarkToolsCallEras(b *testing.B) {
	stateless := "    stateless: true\n"
	// Today's stateless call: the version in the header, no initialize.
	b.Run("stateless-2025", func(b *testing.B) {
		benchClients(b, rawClient{url: helixYAMLServer(b, stateless), stateless: true, callBody: echoCall})
	})
	b.Run("stateless-2026", func(b *testing.B) {
		benchClients(b, rawClient{url: helixYAMLServer(b, stateless), newEra: true, callBody: newEraEchoCall})
	})
	b.Run("default-2026", func(b *testing.B) {
		benchClients(b, rawClient{url: helixYAMLServer(b, ""), newEra: true, callBody: newEraEchoCall})
	})
	// The default server's own era: a session opened with initialize.
	b.Run("default-2025", func(b *testing.B) {
		benchClients(b, rawClient{url: helixYAMLServer(b, ""), callBody: echoCall})
	})
}

// discardSpans is a span exporter that drops every span.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
