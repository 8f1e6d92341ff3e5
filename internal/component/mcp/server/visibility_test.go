package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// recordingHandler keeps the messages of the records it handles.
type recordingHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	h.msgs = append(h.msgs, b.String())
	h.mu.Unlock()
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordingHandler) joined() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.msgs, "\n")
}

// A tool the caller may not call answers exactly like a tool that does not exist:
// same status, same content type, same bytes, on the fast path and on the SDK
// path. The reason is logged. (Spec §14 promises isError with "tool X is blocked",
// which would tell every caller that the tool exists.)
func TestRefusedToolAnswersLikeUnknownTool(t *testing.T) {
	t.Parallel()
	secret := &engine.Workflow{ID: "secret", FromURI: "direct://secret", Processors: step(func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody("the secret")
		return nil
	})}
	hc := newTestContext(t, greetWorkflow(), secret)
	logs := &recordingHandler{}
	refuse := func(_ context.Context, name string) error {
		if name == "secret" {
			return errors.New("tool secret is blocked")
		}
		return nil
	}
	var opts []Options
	for _, fast := range []bool{true, false} {
		suffix := map[bool]string{true: "fast", false: "sdk"}[fast]
		opts = append(opts,
			// secret exists here but is refused ...
			Options{ID: "refusing-" + suffix, Addr: "127.0.0.1:0", ToolAllowed: refuse,
				DisableFastToolCalls: !fast, Logger: slog.New(logs)},
			// ... and does not exist at all here.
			Options{ID: "absent-" + suffix, Addr: "127.0.0.1:0", Expose: []string{"greet"},
				DisableFastToolCalls: !fast})
	}
	comp := startContext(t, hc, opts...)

	ask := func(id, body string) rawReply {
		t.Helper()
		url := serverURL(t, comp, id, "/mcp")
		r := send(t, http.MethodPost, url, nil, initializeBody)
		sid := r.header.Get("Mcp-Session-Id")
		if r.status != http.StatusOK || sid == "" {
			t.Fatalf("%s: initialize: %d %s", id, r.status, r.body)
		}
		hdr := map[string]string{"Mcp-Session-Id": sid}
		send(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return send(t, http.MethodPost, url, hdr, body)
	}
	for _, suffix := range []string{"fast", "sdk"} {
		for _, body := range []string{
			call(7, "secret", `{}`),
			`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"secret"}}`,
			call(8, "secret", `{"a":1}`),
		} {
			t.Run(suffix, func(t *testing.T) {
				refused := ask("refusing-"+suffix, body)
				absent := ask("absent-"+suffix, body)
				if refused.status != absent.status || refused.header.Get("Content-Type") != absent.header.Get("Content-Type") ||
					!bytes.Equal([]byte(refused.body), []byte(absent.body)) {
					t.Fatalf("refused tool answered\n%d %s %q\nunknown tool answered\n%d %s %q", refused.status,
						refused.header.Get("Content-Type"), refused.body, absent.status, absent.header.Get("Content-Type"), absent.body)
				}
				if !strings.Contains(absent.body, `unknown tool \"secret\"`) {
					t.Fatalf("unknown tool answer %q", absent.body)
				}
			})
		}
	}
	if got := logs.joined(); !strings.Contains(got, "tool secret is blocked") {
		t.Errorf("the reason was not logged; logs:\n%s", got)
	}
	// And the fast path answered the refusals itself (the comparison above covers
	// both paths only if it did).
	if n := fastServed(comp, "refusing-fast"); n == 0 {
		t.Error("the fast path answered no call")
	}
}

// A workflow's id is an alias of its sanitized tool name in tools/call (spec §4.2:
// mcp://host:3000/format-code reaches format_code), on both paths; tools/list
// still lists only the sanitized name, and the alias obeys the same filters.
func TestWorkflowIDIsAnAliasOfTheToolName(t *testing.T) {
	t.Parallel()
	format := &engine.Workflow{ID: "format-code", FromURI: "direct://format-code", Processors: step(func(_ context.Context, ex *exchange.Exchange) error {
		args := ex.In().Body().(map[string]any)
		ex.In().SetBody(fmt.Sprintf("formatted %v (%s)", args["code"], ex.In().Header(exchange.HeaderMcpToolName)))
		return nil
	})}
	admin := &engine.Workflow{ID: "admin.tool", FromURI: "direct://admin", Processors: step(func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody("admin!")
		return nil
	})}
	hc := newTestContext(t, format, admin)
	refuse := func(_ context.Context, name string) error {
		if name == "admin_tool" {
			return errors.New("blocked")
		}
		return nil
	}
	comp := startContext(t, hc,
		Options{ID: "fast", Addr: "127.0.0.1:0", ToolAllowed: refuse},
		Options{ID: "sdk", Addr: "127.0.0.1:0", ToolAllowed: refuse, DisableFastToolCalls: true})
	for _, id := range []string{"fast", "sdk"} {
		t.Run(id, func(t *testing.T) {
			url := serverURL(t, comp, id, "/mcp")
			r := send(t, http.MethodPost, url, nil, initializeBody)
			hdr := map[string]string{"Mcp-Session-Id": r.header.Get("Mcp-Session-Id")}
			for _, name := range []string{"format-code", "format_code"} {
				d := decodeReply(t, send(t, http.MethodPost, url, hdr, call(3, name, `{"code":"x=1"}`)))
				wantTool("formatted x=1 (format_code)", false)(t, d)
			}
			// The blocked tool's alias is as unknown as the tool itself.
			for _, name := range []string{"admin.tool", "admin_tool"} {
				d := decodeReply(t, send(t, http.MethodPost, url, hdr, call(4, name, `{}`)))
				if code, msg := rpcError(t, d); code != -32602 || msg != fmt.Sprintf("unknown tool %q", name) {
					t.Fatalf("%s: %v %q", name, code, msg)
				}
			}
			d := decodeReply(t, send(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
			raw, _ := json.Marshal(d.Messages[0].(map[string]any)["result"])
			var lr sdk.ListToolsResult
			if err := json.Unmarshal(raw, &lr); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(toolNamesOf(lr.Tools), ","); got != "format_code" {
				t.Fatalf("tools/list names %s", got)
			}
		})
	}
	// In memory (the go-sdk client, as mcp:// uses it) the alias works too.
	cs := connectInMemory(t, hc, Options{})
	res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "format-code", Arguments: map[string]any{"code": "y"}})
	if err != nil || res.IsError || resultText(t, res) != "formatted y (format_code)" {
		t.Fatalf("in-memory alias call: %v %+v", err, res)
	}
}

// readWorkflows reads a workflows resource and decodes it.
func readWorkflows(t *testing.T, cs *sdk.ClientSession, uri string) []WorkflowEntry {
	t.Helper()
	rr, err := cs.ReadResource(testCtx(t), &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	var entries []WorkflowEntry
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &entries); err != nil {
		t.Fatal(err)
	}
	return entries
}

func entryIDs(entries []WorkflowEntry) string {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	return strings.Join(ids, ",")
}

// helix://workflows and helix://routes list only the workflows the server exposes
// and the caller may list (the filters of tools/list), with trigger URIs as
// written: a secret that ${env:…} brought into a URI is not shown. (Spec §9.1 lists
// every workflow of the context; helix://routes is the alias its troubleshooting
// section names.)
func TestWorkflowsResourceListsOnlyWhatTheCallerMayList(t *testing.T) {
	t.Parallel()
	noop := step(func(context.Context, *exchange.Exchange) error { return nil })
	hook := &engine.Workflow{ID: "hook", Description: "Web hook", FromURI: "direct://hook?token=s3cret",
		ShownURI: "direct://hook?token=${env:HOOK_SECRET}", Processors: noop}
	hc := newTestContext(t, greetWorkflow(), hook,
		&engine.Workflow{ID: "admin-tool", FromURI: "direct://admin", Processors: noop},
		&engine.Workflow{ID: "internal", FromURI: "direct://internal", Processors: noop},
		&engine.Workflow{ID: "scoped", FromURI: "direct://scoped", Processors: noop})
	allowed := func(ctx context.Context, name string) error {
		switch name {
		case "admin_tool":
			return errors.New("blocked")
		case "scoped":
			if c := security.ClaimsFromContext(ctx); c == nil || !slices.Contains(c.Scopes, "s") {
				return errors.New("scope s missing")
			}
		}
		return nil
	}
	cs := connectInMemory(t, hc, Options{Expose: []string{"hook", "greet", "admin-tool", "scoped"}, ToolAllowed: allowed})
	for _, uri := range []string{WorkflowsResourceURI, RoutesResourceURI} {
		entries := readWorkflows(t, cs, uri)
		// The context's order, not expose's; internal is not exposed, admin-tool is
		// blocked, scoped needs a scope this caller lacks.
		if got := entryIDs(entries); got != "greet,hook" {
			t.Fatalf("%s lists %s", uri, got)
		}
		if entries[1].FromURI != "direct://hook?token=${env:HOOK_SECRET}" || strings.Contains(fmt.Sprint(entries), "s3cret") {
			t.Fatalf("%s shows %+v", uri, entries[1])
		}
	}

	// A caller whose token carries the scope sees scoped too (over HTTP the go-sdk
	// attaches the token to the request as here).
	opts := Options{Expose: []string{"greet", "scoped"}}
	tools, err := buildTools(tool.FromWorkflows(hc), &opts)
	if err != nil {
		t.Fatal(err)
	}
	handler := workflowsResourceHandler(hc, tools, allowed)
	for _, tc := range []struct {
		scopes []string
		want   string
	}{{nil, "greet"}, {[]string{"s"}, "greet,scoped"}} {
		req := &sdk.ReadResourceRequest{Params: &sdk.ReadResourceParams{URI: WorkflowsResourceURI}}
		if tc.scopes != nil {
			req.Extra = &sdk.RequestExtra{TokenInfo: &auth.TokenInfo{Scopes: tc.scopes, UserID: "u"}}
		}
		res, err := handler(testCtx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		var entries []WorkflowEntry
		if err := json.Unmarshal([]byte(res.Contents[0].Text), &entries); err != nil {
			t.Fatal(err)
		}
		if got := entryIDs(entries); got != tc.want {
			t.Errorf("scopes %v: %s, want %s", tc.scopes, got, tc.want)
		}
	}
}
