package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/report"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// reportingWorkflows: "work" reports progress (once going back and once standing
// still, which must not be sent) and log messages at several levels, and calls the
// direct:// sub-workflow "work-sub", which reports too and answers.
func reportingWorkflows() []*engine.Workflow {
	return []*engine.Workflow{
		{ID: "work", FromURI: "direct://work", Description: "reports while it works", ToURIs: []string{"direct://work-sub"},
			Processors: step(func(ctx context.Context, ex *exchange.Exchange) error {
				report.Progress(ctx, 0, 100, "started")
				report.Log(ctx, report.LevelDebug, "", "below the client's level")
				report.Log(ctx, report.LevelInfo, "", "Tool execution started")
				report.Progress(ctx, 50, 100, "")
				report.Progress(ctx, 40, 100, "going back: dropped")
				report.Progress(ctx, 50, 100, "standing still: dropped")
				report.Log(ctx, report.LevelWarning, "importer", map[string]any{"rows": 2})
				return nil
			})},
		{ID: "work-sub", FromURI: "direct://work-sub", Processors: step(func(ctx context.Context, ex *exchange.Exchange) error {
			report.Progress(ctx, 100, 100, "sub-workflow")
			report.Log(ctx, report.LevelError, "", "from the sub-workflow")
			ex.In().SetBody("done")
			return nil
		})},
	}
}

// notifications records what a client received.
type notifications struct {
	mu       sync.Mutex
	progress []string
	logs     []string
}

func (n *notifications) options() *sdk.ClientOptions {
	return &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			n.mu.Lock()
			defer n.mu.Unlock()
			p := req.Params
			n.progress = append(n.progress, fmt.Sprintf("%v %g/%g %s", p.ProgressToken, p.Progress, p.Total, p.Message))
		},
		//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
			n.mu.Lock()
			defer n.mu.Unlock()
			p := req.Params
			n.logs = append(n.logs, fmt.Sprintf("%s %s %v", p.Level, p.Logger, p.Data))
		},
	}
}

// take waits until at least the given numbers of notifications arrived (the go-sdk
// client may hand them to its handlers after the result) and returns them all.
func (n *notifications) take(t *testing.T, wantProgress, wantLogs int) (progress, logs []string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	n.mu.Lock()
	defer n.mu.Unlock()
	for (len(n.progress) < wantProgress || len(n.logs) < wantLogs) && time.Now().Before(deadline) {
		n.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		n.mu.Lock()
	}
	progress, logs = n.progress, n.logs
	n.progress, n.logs = nil, nil
	return progress, logs
}

func TestToolCallProgressAndLogs(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, reportingWorkflows()...)
	inR, inW := io.Pipe()   // client → server
	outR, outW := io.Pipe() // server → client
	comp := startContext(t, hc,
		Options{ID: "helix", Addr: "127.0.0.1:0"},
		Options{ID: "stateless", Addr: "127.0.0.1:0", Stateless: true},
		Options{ID: "sdk", Addr: "127.0.0.1:0", HTTPTransport: HTTPTransportSDK},
		Options{ID: "sse", Transport: "sse", Addr: "127.0.0.1:0"},
		Options{ID: "stdio", Transport: "stdio", Stdin: inR, Stdout: outW},
	)
	transports := []struct {
		name      string
		transport func() sdk.Transport
		fast      bool   // calls without progress token may take the fast path
		version   string // the client's protocol ("": the go-sdk's default, 2026-07-28)
	}{
		// No standalone GET stream: notifications must travel on the call's POST.
		// Sessions of 2025-11-25 set their log level with logging/setLevel.
		{"streamable helix", func() sdk.Transport {
			return &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "helix", "/mcp"), MaxRetries: -1, DisableStandaloneSSE: true}
		}, true, "2025-11-25"},
		{"streamable sdk", func() sdk.Transport {
			return &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "sdk", "/mcp"), MaxRetries: -1, DisableStandaloneSSE: true}
		}, false, "2025-11-25"},
		{"sse", func() sdk.Transport { return &sdk.SSEClientTransport{Endpoint: serverURL(t, comp, "sse", "/sse")} }, false, ""},
		// These speak 2026-07-28, where each request states its log level in _meta
		// (a stateful server serves it without a session too).
		{"stdio", func() sdk.Transport { return &sdk.IOTransport{Reader: outR, Writer: inW} }, false, ""},
		{"stateless", func() sdk.Transport {
			return &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "stateless", "/mcp"), MaxRetries: -1, DisableStandaloneSSE: true}
		}, false, ""},
		{"streamable helix 2026-07-28", func() sdk.Transport {
			return &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "helix", "/mcp"), MaxRetries: -1, DisableStandaloneSSE: true}
		}, false, ""},
		{"streamable sdk 2026-07-28", func() sdk.Transport {
			return &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "sdk", "/mcp"), MaxRetries: -1, DisableStandaloneSSE: true}
		}, false, ""},
	}
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) {
			var got notifications
			client := sdk.NewClient(&sdk.Implementation{Name: "report-test", Version: "1.0.0"}, got.options())
			cs, err := client.Connect(testCtx(t), tc.transport(), &sdk.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cs.Close() }()
			logLevel := "" // set by logging/setLevel; the 2026-07-28 protocol sends it with each call
			newProtocol := cs.InitializeResult().ProtocolVersion >= "2026-07-28"
			call := func(token any) {
				t.Helper()
				params := &sdk.CallToolParams{Name: "work", Arguments: map[string]any{}}
				if logLevel != "" && newProtocol {
					//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
					params.Meta = sdk.Meta{sdk.MetaKeyLogLevel: logLevel}
				}
				if token != nil {
					params.SetProgressToken(token)
				}
				res, err := cs.CallTool(testCtx(t), params)
				if err != nil {
					t.Fatal(err)
				}
				if res.IsError || resultText(t, res) != "done" {
					t.Fatalf("result %+v", res)
				}
			}

			// Neither a progress token nor a log level: nothing is sent.
			var fastBefore uint64
			if tc.fast {
				fastBefore = fastServed(comp, "helix")
			}
			call(nil)
			if p, l := got.take(t, 0, 0); len(p)+len(l) != 0 {
				t.Fatalf("notifications without being asked: %v %v", p, l)
			}
			if tc.fast && fastServed(comp, "helix") != fastBefore+1 {
				t.Error("a plain call without log level did not take the fast path")
			}

			// A progress token: increasing progress only.
			call("tok-1")
			want := []string{"tok-1 0/100 started", "tok-1 50/100 ", "tok-1 100/100 sub-workflow"}
			p, l := got.take(t, len(want), 0)
			if strings.Join(p, "|") != strings.Join(want, "|") {
				t.Errorf("progress\n  %q\nwant\n  %q", p, want)
			}
			if len(l) != 0 {
				t.Errorf("logs before logging/setLevel: %v", l)
			}

			// A log level: messages at or above it, logger defaulting to the tool name.
			if !newProtocol {
				//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
				if err := cs.SetLoggingLevel(testCtx(t), &sdk.SetLoggingLevelParams{Level: "info"}); err != nil {
					t.Fatal(err)
				}
			}
			logLevel = "info"
			if tc.fast {
				fastBefore = fastServed(comp, "helix")
			}
			call(nil)
			wantLogs := []string{"info work Tool execution started", "warning importer map[rows:2]", "error work from the sub-workflow"}
			p, l = got.take(t, 0, len(wantLogs))
			if strings.Join(l, "|") != strings.Join(wantLogs, "|") {
				t.Errorf("logs\n  %q\nwant\n  %q", l, wantLogs)
			}
			if len(p) != 0 {
				t.Errorf("progress without a token: %v", p)
			}
			if tc.fast && fastServed(comp, "helix") != fastBefore {
				t.Error("a call of a session with a log level took the fast path, which cannot send log messages")
			}
		})
	}
}

// TestProgressWithJSONOnlyClient: a client that accepts only application/json gets
// the result without the notifications it cannot receive.
func TestProgressWithJSONOnlyClient(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, reportingWorkflows()...)
	comp := startContext(t, hc, Options{ID: "s", Addr: "127.0.0.1:0"})
	url := serverURL(t, comp, "s", "/mcp")
	hdr := sessionFor(t, url)
	hdr["Accept"] = "application/json"
	r := send(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"t"}}}`)
	if ct := r.header.Get("Content-Type"); r.status != http.StatusOK || !strings.HasPrefix(ct, "application/json") ||
		!strings.Contains(r.body, `"done"`) || strings.Contains(r.body, "notifications/progress") {
		t.Fatalf("answer %d %s %q", r.status, ct, r.body)
	}
}

// TestNotificationsPrecedeTheResult: on Helix's Streamable HTTP transport a call's
// progress and log notifications travel on its POST's event stream, before the
// result.
func TestNotificationsPrecedeTheResult(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, reportingWorkflows()...)
	comp := startContext(t, hc, Options{ID: "s", Addr: "127.0.0.1:0"})
	url := serverURL(t, comp, "s", "/mcp")
	hdr := sessionFor(t, url)
	if r := send(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"warning"}}`); r.status != http.StatusOK {
		t.Fatalf("setLevel: %d %s", r.status, r.body)
	}
	r := send(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":8}}}`)
	if ct := r.header.Get("Content-Type"); r.status != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("answer %d %s %q", r.status, ct, r.body)
	}
	var events []string
	for _, line := range strings.Split(r.body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var m struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
			Params struct {
				Progress float64 `json:"progress"`
				Level    string  `json:"level"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		switch m.Method {
		case "notifications/progress":
			events = append(events, fmt.Sprintf("progress %g", m.Params.Progress))
		case "notifications/message":
			events = append(events, "log "+m.Params.Level)
		case "":
			events = append(events, fmt.Sprintf("result %v", m.ID))
		}
	}
	want := []string{"progress 0", "progress 50", "log warning", "progress 100", "log error", "result 7"}
	if strings.Join(events, ", ") != strings.Join(want, ", ") {
		t.Fatalf("events\n  %v\nwant\n  %v\nbody %s", events, want, r.body)
	}
}
