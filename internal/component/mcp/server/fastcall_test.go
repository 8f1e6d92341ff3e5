package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// fastWorkflows are the tools of the equivalence tests: greet, a validated tool
// with an output schema (search), a failing, a panicking and a slow one (trouble),
// one that is blocked without the "secret" scope, and one whose reply breaks its
// output schema.
func fastWorkflows(slow *slowProbe) []*engine.Workflow {
	var cancelled atomic.Bool
	wfs := troubleWorkflows(&cancelled)
	for i, wf := range wfs {
		if wf.ID == "slow" {
			wfs[i] = &engine.Workflow{ID: "slow", FromURI: "direct://slow", Processors: step(func(ctx context.Context, ex *exchange.Exchange) error {
				slow.started <- struct{}{}
				select {
				case <-ctx.Done():
					slow.cancelled <- ctx.Err()
					return ctx.Err()
				case <-time.After(testTimeout):
					ex.In().SetBody("late")
					return nil
				}
			})}
		}
	}
	bad := searchTool(`{"results":"not an array","total":1}`)
	bad.ID, bad.FromURI = "badout", "direct://badout"
	search := searchTool(nil)
	search.FromURI = "direct://search" // the tool:// component is pkg/app's
	// caps answers with the capabilities header a 2026-07-28 call's workflow gets,
	// if any: only tools whose workflows ask get it, and those take the SDK path.
	caps := &engine.Workflow{ID: "caps", FromURI: "direct://caps", Processors: step(func(_ context.Context, ex *exchange.Exchange) error {
		v, ok := ex.In().Header(HeaderClientCapabilities).(string)
		if !ok {
			ex.In().SetBody("no capabilities header")
			return nil
		}
		ex.In().SetBody(fmt.Sprintf("capabilities %q", v))
		return nil
	})}
	return append(wfs, search, bad, caps,
		&engine.Workflow{ID: "secret", FromURI: "direct://secret", Processors: step(func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody("the secret")
			return nil
		})})
}

// slowProbe reports when the slow tool starts and how its context ended.
type slowProbe struct {
	started   chan struct{}
	cancelled chan error
}

func newSlowProbe() *slowProbe {
	return &slowProbe{started: make(chan struct{}, 8), cancelled: make(chan error, 8)}
}

func (p *slowProbe) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-p.started:
	case <-time.After(testTimeout):
		t.Fatal("the slow tool did not start")
	}
}

func (p *slowProbe) waitCancelled(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("slow tool ended with %v, want context.Canceled", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the slow tool's context was not cancelled")
	}
}

// fastTestServers starts one context serving the same tools four times: fast path
// on and off, stateful and stateless, each behind a bearer-token check whose
// scopes the ToolAllowed hook reads.
func fastTestServers(t *testing.T, slow *slowProbe) *Component {
	t.Helper()
	hc := newTestContext(t, fastWorkflows(slow)...)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		ti := &auth.TokenInfo{UserID: "ada", Expiration: time.Now().Add(time.Hour)}
		switch token {
		case "plain":
		case "secret":
			ti.Scopes = []string{"secret"}
		default:
			return nil, auth.ErrInvalidToken
		}
		return ti, nil
	}
	allowed := func(ctx context.Context, name string) error {
		c := security.ClaimsFromContext(ctx)
		if name == "secret" && (c == nil || !slices.Contains(c.Scopes, "secret")) {
			return fmt.Errorf("tool %s is blocked", name)
		}
		return nil
	}
	var opts []Options
	for _, id := range []string{"fast", "sdk", "fast-stateless", "sdk-stateless"} {
		opts = append(opts, Options{ID: id, Addr: "127.0.0.1:0", Stateless: strings.HasSuffix(id, "stateless"),
			DisableFastToolCalls: strings.HasPrefix(id, "sdk"), ToolAllowed: allowed,
			HTTPMiddleware: auth.RequireBearerToken(verify, nil)})
	}
	return startContext(t, hc, opts...)
}

func fastServed(comp *Component, id string) uint64 {
	comp.mu.Lock()
	s := comp.running[id]
	comp.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fast == nil {
		return 0
	}
	return s.fast.Served()
}

// fastStep is one raw HTTP request of an equivalence sequence. sid sends the
// session id of the sequence's initialize; fast says whether the fast path must
// answer it (when on).
type fastStep struct {
	name   string
	body   string
	hdr    map[string]string
	noSID  bool
	fast   bool
	expect func(t *testing.T, r decodedReply) // checks the answer itself, not only sameness
}

// decodedReply is an HTTP answer with its JSON-RPC messages decoded, so that two
// answers compare by meaning (key order, event framing) rather than by bytes.
type decodedReply struct {
	Status      int
	ContentType string
	Messages    []any    // JSON bodies and event-stream data
	IDs         []string // the ids of the messages exactly as sent (Messages has float64s)
	Text        string   // non-JSON bodies (http.Error)
}

// rawIDs returns the "id" of a JSON-RPC message, or of each in a batch, as written.
func rawIDs(data []byte) []string {
	var one struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &one) == nil {
		return []string{string(one.ID)}
	}
	var batch []struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(data, &batch)
	var ids []string
	for _, m := range batch {
		ids = append(ids, string(m.ID))
	}
	slices.Sort(ids)
	return ids
}

func decodeReply(t *testing.T, r rawReply) decodedReply {
	t.Helper()
	ct, _, _ := strings.Cut(r.header.Get("Content-Type"), ";")
	d := decodedReply{Status: r.status, ContentType: ct}
	switch ct {
	case "application/json":
		var v any
		if err := json.Unmarshal([]byte(r.body), &v); err != nil {
			t.Fatalf("JSON answer %q: %v", r.body, err)
		}
		if batch, ok := v.([]any); ok {
			// A batch is answered in its order on either path; sorting keeps the
			// comparison independent of it.
			slices.SortFunc(batch, func(a, b any) int {
				return strings.Compare(fmt.Sprint(a.(map[string]any)["id"]), fmt.Sprint(b.(map[string]any)["id"]))
			})
		}
		d.Messages = append(d.Messages, v)
		d.IDs = rawIDs([]byte(r.body))
	case "text/event-stream":
		sc := bufio.NewScanner(strings.NewReader(r.body))
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var v any
				if err := json.Unmarshal([]byte(data), &v); err != nil {
					t.Fatalf("event %q: %v", data, err)
				}
				d.Messages = append(d.Messages, v)
				d.IDs = append(d.IDs, rawIDs([]byte(data))...)
			}
		}
	default:
		d.Text = strings.TrimSpace(r.body)
	}
	return d
}

// toolText returns the result's first text content and isError, failing when the
// message is not a tool result.
func toolText(t *testing.T, d decodedReply) (string, bool) {
	t.Helper()
	if len(d.Messages) != 1 {
		t.Fatalf("want one message, got %+v", d)
	}
	res, _ := d.Messages[0].(map[string]any)["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("not a tool result: %+v", d.Messages[0])
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	isErr, _ := res["isError"].(bool)
	return text, isErr
}

func rpcError(t *testing.T, d decodedReply) (float64, string) {
	t.Helper()
	if len(d.Messages) != 1 {
		t.Fatalf("want one message, got %+v", d)
	}
	e, _ := d.Messages[0].(map[string]any)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("not an error: %+v", d.Messages[0])
	}
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	return code, msg
}

func wantTool(text string, isError bool) func(*testing.T, decodedReply) {
	return func(t *testing.T, d decodedReply) {
		t.Helper()
		got, isErr := toolText(t, d)
		if !strings.Contains(got, text) || isErr != isError {
			t.Fatalf("tool result %q (isError %v), want %q (isError %v)", got, isErr, text, isError)
		}
	}
}

func both(checks ...func(*testing.T, decodedReply)) func(*testing.T, decodedReply) {
	return func(t *testing.T, d decodedReply) {
		t.Helper()
		for _, c := range checks {
			c(t, d)
		}
	}
}

func wantIDs(ids ...string) func(*testing.T, decodedReply) {
	return func(t *testing.T, d decodedReply) {
		t.Helper()
		if !slices.Equal(d.IDs, ids) {
			t.Fatalf("ids %q, want %q (%+v)", d.IDs, ids, d)
		}
	}
}

func wantRPCError(status int, code float64) func(*testing.T, decodedReply) {
	return func(t *testing.T, d decodedReply) {
		t.Helper()
		if d.Status != status {
			t.Fatalf("status %d, want %d (%+v)", d.Status, status, d)
		}
		if got, msg := rpcError(t, d); got != code {
			t.Fatalf("error %v %q, want code %v", got, msg, code)
		}
	}
}

func call(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// newEraCall is a 2026-07-28 tools/call: the version and empty client
// capabilities in _meta, then extra (more _meta members, or "").
func newEraCall(id int, tool, args, extra string) string {
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	if extra != "" {
		meta += "," + extra
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{%s}}}`, id, tool, args, meta)
}

// newEraCallCaps is a 2026-07-28 call of tool (greet when absent) whose client
// capabilities are caps.
func newEraCallCaps(id int, caps, extra string, tool ...string) string {
	name := "greet"
	if len(tool) > 0 {
		name = tool[0]
	}
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps
	if extra != "" {
		meta += "," + extra
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"_meta":{%s}}}`, id, name, meta)
}

// newEraHeaders are the headers of a 2026-07-28 tools/call of tool.
func newEraHeaders(tool string) map[string]string {
	return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
}

func withHeader(h map[string]string, k, v string) map[string]string {
	h[k] = v
	return h
}

// wantNewEraResult checks that a result carries a 2026-07-28 result's marks: its
// resultType and the server's identity in _meta.
func wantNewEraResult(resultType string) func(*testing.T, decodedReply) {
	return func(t *testing.T, d decodedReply) {
		t.Helper()
		if len(d.Messages) != 1 {
			t.Fatalf("want one message: %+v", d)
		}
		res, _ := d.Messages[0].(map[string]any)["result"].(map[string]any)
		if res == nil {
			t.Fatalf("no result: %+v", d)
		}
		if res["resultType"] != resultType {
			t.Errorf("resultType %v, want %s: %+v", res["resultType"], resultType, res)
		}
		meta, _ := res["_meta"].(map[string]any)
		if info, _ := meta[sdk.MetaKeyServerInfo].(map[string]any); info == nil || info["name"] == "" {
			t.Errorf("no serverInfo in _meta: %+v", res)
		}
	}
}

var equivalenceSteps = []fastStep{
	{name: "valid call", body: call(10, "greet", `{"name":"Ada"}`), fast: true, expect: wantTool("Hello, Ada!", false)},
	{name: "no arguments", body: `{"jsonrpc":"2.0","id":"s-11","method":"tools/call","params":{"name":"greet"}}`, fast: true,
		expect: wantTool("Hello, World!", false)},
	{name: "invalid args", body: call(12, "search", `{"limit":3}`), fast: true, expect: wantTool(`invalid arguments for tool search: field "query" is required`, true)},
	{name: "arguments not an object", body: call(13, "greet", `"Ada"`), fast: true, expect: wantTool("tool arguments must be a JSON object", true)},
	{name: "unknown tool", body: call(14, "nope", `{}`), fast: true, expect: func(t *testing.T, d decodedReply) {
		if code, msg := rpcError(t, d); code != -32602 || msg != `unknown tool "nope"` {
			t.Fatalf("unknown tool: %v %q", code, msg)
		}
	}},
	{name: "blocked tool", body: call(15, "secret", `{}`), fast: true, expect: func(t *testing.T, d decodedReply) {
		if code, msg := rpcError(t, d); code != -32602 || msg != `unknown tool "secret"` {
			t.Fatalf("blocked tool: %v %q", code, msg)
		}
	}},
	{name: "allowed with scope", body: call(16, "secret", `{}`), hdr: map[string]string{"Authorization": "Bearer secret"}, fast: true,
		expect: wantTool("the secret", false)},
	{name: "tool fails", body: call(17, "fails", `{}`), fast: true, expect: wantTool("database unavailable", true)},
	{name: "tool panics", body: call(18, "panics", `{}`), fast: true, expect: wantTool("panic", true)},
	{name: "structured output", body: call(19, "search", `{"query":"go"}`), fast: true, expect: func(t *testing.T, d decodedReply) {
		res := d.Messages[0].(map[string]any)["result"].(map[string]any)
		want := map[string]any{"results": []any{"go"}, "total": float64(10)}
		if !reflect.DeepEqual(res["structuredContent"], want) {
			t.Fatalf("structuredContent %+v", res["structuredContent"])
		}
	}},
	{name: "reply breaks output schema", body: call(20, "badout", `{"query":"go"}`), fast: true, expect: wantTool("does not match its output schema", true)},
	{name: "event stream only", body: call(21, "greet", `{"name":"Bo"}`), hdr: map[string]string{"Accept": "text/event-stream"}, fast: true,
		expect: func(t *testing.T, d decodedReply) {
			if d.ContentType != "text/event-stream" {
				t.Fatalf("content type %q", d.ContentType)
			}
			wantTool("Hello, Bo!", false)(t, d)
		}},
	{name: "progress token goes to the SDK", body: `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Cy"},"_meta":{"progressToken":"p1"}}}`,
		expect: wantTool("Hello, Cy!", false)},
	// A _meta with nothing but the caller's trace context is served by the fast path
	// (tracing_test.go checks its span); anything more in it goes to the SDK.
	{name: "trace context in _meta", body: `{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Tia"},` +
		`"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"a=1"}}}`, fast: true,
		expect: wantTool("Hello, Tia!", false)},
	{name: "empty _meta", body: `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"_meta":{},"name":"greet"}}`, fast: true,
		expect: wantTool("Hello, World!", false)},
	{name: "trace context and progress token go to the SDK", body: `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"greet",` +
		`"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","progressToken":7}}}`, expect: wantTool("Hello, World!", false)},
	{name: "traceparent not a string goes to the SDK", body: `{"jsonrpc":"2.0","id":43,"method":"tools/call","params":{"name":"greet","_meta":{"traceparent":1}}}`},
	{name: "_meta null goes to the SDK", body: `{"jsonrpc":"2.0","id":44,"method":"tools/call","params":{"name":"greet","_meta":null}}`},
	{name: "_meta not an object goes to the SDK", body: `{"jsonrpc":"2.0","id":45,"method":"tools/call","params":{"name":"greet","_meta":"x"}}`},
	{name: "capitalised key goes to the SDK", body: `{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"Name":"greet"}}`},
	{name: "name not a string", body: `{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":7}}`},
	{name: "params not an object", body: `{"jsonrpc":"2.0","id":25,"method":"tools/call","params":[1]}`},
	{name: "missing params", body: `{"jsonrpc":"2.0","id":26,"method":"tools/call"}`},
	{name: "batch", body: "[" + call(27, "greet", `{"name":"Di"}`) + "," + call(28, "nope", `{}`) + "]",
		hdr: map[string]string{"Mcp-Protocol-Version": "2025-03-26"}, expect: func(t *testing.T, d decodedReply) {
			if d.Status == http.StatusBadRequest && strings.Contains(d.Text, "batches are not allowed from protocol 2025-06-18") {
				return // a stateful session negotiated 2025-06-18: its version decides, not the header
			}
			if len(d.Messages) != 1 || len(d.Messages[0].([]any)) != 2 {
				t.Fatalf("batch answer %+v", d)
			}
		}},
	{name: "batch refused on 2025-06-18", body: "[" + call(29, "greet", `{}`) + "]", hdr: map[string]string{"Mcp-Protocol-Version": "2025-06-18"},
		expect: func(t *testing.T, d decodedReply) {
			if d.Status != http.StatusBadRequest {
				t.Fatalf("status %d", d.Status)
			}
		}},
	{name: "2026-07-28 request", body: `{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"greet","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		hdr: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "greet"}},
	{name: "unsupported protocol header", body: call(31, "greet", `{}`), hdr: map[string]string{"Mcp-Protocol-Version": "2023-01-01"}},
	// 2026-07-28 calls have no session; the fast path answers them, marked as that
	// version's results, when their _meta is the version's and nothing more.
	{name: "2026-07-28 call", body: newEraCall(50, "greet", `{"name":"Nia"}`, `"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}`),
		hdr: newEraHeaders("greet"), noSID: true, fast: true, expect: both(wantTool("Hello, Nia!", false), wantNewEraResult("complete"))},
	{name: "2026-07-28 call with trace context", body: newEraCall(51, "greet", `{}`, `"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`),
		hdr: newEraHeaders("greet"), noSID: true, fast: true, expect: both(wantTool("Hello, World!", false), wantNewEraResult("complete"))},
	{name: "2026-07-28 structured output", body: newEraCall(52, "search", `{"query":"go"}`, ""), hdr: newEraHeaders("search"), noSID: true, fast: true,
		expect: wantNewEraResult("complete")},
	{name: "2026-07-28 tool error", body: newEraCall(53, "fails", `{}`, ""), hdr: newEraHeaders("fails"), noSID: true, fast: true,
		expect: both(wantTool("database unavailable", true), wantNewEraResult("complete"))},
	{name: "2026-07-28 unknown tool", body: newEraCall(54, "nope", `{}`, ""), hdr: newEraHeaders("nope"), noSID: true, fast: true,
		expect: wantRPCError(http.StatusOK, -32602)},
	{name: "2026-07-28 event stream only", body: newEraCall(55, "greet", `{}`, ""), hdr: withHeader(newEraHeaders("greet"), "Accept", "text/event-stream"),
		noSID: true, fast: true, expect: wantNewEraResult("complete")},
	{name: "2026-07-28 call of a tool that does not ask", body: newEraCallCaps(65, `{"elicitation":{},"sampling":null,"roots":{"listChanged":true},"experimental":{}}`, "", "caps"),
		hdr: newEraHeaders("caps"), noSID: true, fast: true, expect: wantTool("no capabilities header", false)},
	{name: "2026-07-28 capabilities not an object go to the SDK", body: `{"jsonrpc":"2.0","id":56,"method":"tools/call","params":{"name":"greet",` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}`, hdr: newEraHeaders("greet"), noSID: true},
	{name: "2026-07-28 capability of the wrong type goes to the SDK", body: newEraCallCaps(57, `{"elicitation":7}`, ""), hdr: newEraHeaders("greet"), noSID: true},
	{name: "2026-07-28 capitalised capability goes to the SDK", body: newEraCallCaps(58, `{"Elicitation":7}`, ""), hdr: newEraHeaders("greet"), noSID: true},
	{name: "2026-07-28 client info not an object goes to the SDK", body: newEraCall(59, "greet", `{}`, `"io.modelcontextprotocol/clientInfo":"c"`),
		hdr: newEraHeaders("greet"), noSID: true},
	{name: "2026-07-28 client info null goes to the SDK", body: newEraCall(60, "greet", `{}`, `"io.modelcontextprotocol/clientInfo":null`),
		hdr: newEraHeaders("greet"), noSID: true},
	{name: "2026-07-28 log level goes to the SDK", body: newEraCall(61, "greet", `{}`, `"io.modelcontextprotocol/logLevel":"debug"`),
		hdr: newEraHeaders("greet"), noSID: true, expect: wantNewEraResult("complete")},
	{name: "2026-07-28 progress token goes to the SDK", body: newEraCall(62, "greet", `{}`, `"progressToken":"p"`),
		hdr: newEraHeaders("greet"), noSID: true, expect: wantNewEraResult("complete")},
	{name: "2026-07-28 _meta without capabilities goes to the SDK", body: `{"jsonrpc":"2.0","id":63,"method":"tools/call","params":{"name":"greet",` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, hdr: newEraHeaders("greet"), noSID: true},
	{name: "2026-07-28 repeated _meta key goes by the last", body: `{"jsonrpc":"2.0","id":64,"method":"tools/call","params":{"name":"greet",` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientCapabilities":7}}}`,
		hdr: newEraHeaders("greet"), noSID: true},
	{name: "tools/list hides blocked", body: `{"jsonrpc":"2.0","id":32,"method":"tools/list"}`},
	{name: "ping", body: `{"jsonrpc":"2.0","id":33,"method":"ping"}`},
	// Ids come back exactly as sent, also beyond float64's integers.
	{name: "id beyond float64", body: `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ida"}}}`,
		fast: true, expect: both(wantTool("Hello, Ida!", false), wantIDs("9007199254740993"))},
	{name: "largest int64 id", body: `{"jsonrpc":"2.0","id":9223372036854775807,"method":"tools/call","params":{"name":"greet"}}`,
		fast: true, expect: wantIDs("9223372036854775807")},
	{name: "largest int64 id, SDK session", body: `{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}`, expect: wantIDs("9223372036854775807")},
	{name: "id 1.0 as the go-sdk reads it", body: `{"jsonrpc":"2.0","id":1.0,"method":"ping"}`, expect: wantIDs("1")},
	// MCP ids are strings or integers: a fractional id, or an integer beyond
	// int64, cannot be answered with the id sent, so it is an invalid request
	// (id null), never an answer under another id.
	{name: "fractional id, tools/call", body: `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"greet"}}`,
		expect: both(wantRPCError(http.StatusBadRequest, -32600), wantIDs("null"))},
	{name: "fractional id, ping", body: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		expect: both(wantRPCError(http.StatusBadRequest, -32600), wantIDs("null"))},
	{name: "30-digit id, tools/call", body: `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"greet"}}`,
		expect: both(wantRPCError(http.StatusBadRequest, -32600), wantIDs("null"))},
	{name: "30-digit id, tools/list", body: `{"jsonrpc":"2.0","id":-123456789012345678901234567890,"method":"tools/list"}`,
		expect: both(wantRPCError(http.StatusBadRequest, -32600), wantIDs("null"))},
	{name: "1e3 id is the integer 1000", body: `{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, expect: wantIDs("1000")},
	// Envelopes are read like the go-sdk's jsonrpc.DecodeMessage: keys are case-sensitive.
	{name: "capitalised envelope", body: `{"jsonrpc":"2.0","ID":34,"Method":"ping"}`, expect: wantRPCError(http.StatusBadRequest, -32600)},
	{name: "id null", body: `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"greet"}}`,
		expect: both(wantRPCError(http.StatusBadRequest, -32600), wantIDs("null"))},
	{name: "tools/call without id", body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"greet"}}`,
		expect: both(wantRPCError(http.StatusBadRequest, -32600), wantIDs("null"))},
	{name: "not JSON", body: `this is not json`, expect: both(wantRPCError(http.StatusBadRequest, -32700), wantIDs("null"))},
	{name: "unknown protocol version", body: call(35, "greet", `{}`), hdr: map[string]string{"Mcp-Protocol-Version": "garbage"},
		expect: func(t *testing.T, d decodedReply) {
			wantRPCError(http.StatusBadRequest, sdk.CodeUnsupportedProtocolVersion)(t, d)
			if _, msg := rpcError(t, d); !strings.Contains(msg, "2025-11-25") || strings.Contains(msg, "stateless") {
				t.Fatalf("message %q does not name the supported versions", msg)
			}
		}},
	{name: "no 2026-07-28 fields before 2026-07-28", body: `{"jsonrpc":"2.0","id":36,"method":"tools/list"}`, expect: func(t *testing.T, d decodedReply) {
		res, _ := d.Messages[0].(map[string]any)["result"].(map[string]any)
		if res == nil {
			t.Fatalf("no result: %+v", d)
		}
		for _, k := range newProtocolResultKeys {
			if _, ok := res[k]; ok {
				t.Errorf("result has %s: %+v", k, res)
			}
		}
	}},
}

// runSequence sends the stateful sequence: a call without a session, initialize,
// a call before notifications/initialized, then equivalenceSteps.
func runSequence(t *testing.T, url string, stateless bool, steps []fastStep) []decodedReply {
	t.Helper()
	base := map[string]string{"Authorization": "Bearer plain"}
	var out []decodedReply
	do := func(s fastStep, sid string) {
		hdr := map[string]string{}
		for k, v := range base {
			hdr[k] = v
		}
		if sid != "" && !s.noSID {
			hdr["Mcp-Session-Id"] = sid
		}
		for k, v := range s.hdr {
			hdr[k] = v
		}
		d := decodeReply(t, send(t, http.MethodPost, url, hdr, s.body))
		if s.expect != nil {
			t.Run(s.name, func(t *testing.T) { s.expect(t, d) })
		}
		out = append(out, d)
	}
	sid := ""
	if !stateless {
		do(fastStep{name: "call without session", body: call(1, "greet", `{}`), expect: func(t *testing.T, d decodedReply) {
			if d.Status != http.StatusBadRequest {
				t.Fatalf("status %d", d.Status)
			}
		}}, "")
		hdr := map[string]string{"Authorization": "Bearer plain"}
		r := send(t, http.MethodPost, url, hdr, initializeBody)
		sid = r.header.Get("Mcp-Session-Id")
		if r.status != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d %s", r.status, r.body)
		}
		out = append(out, decodeReply(t, r))
		// The SDK serves calls once initialize is done, before notifications/initialized.
		do(fastStep{name: "call before initialized", body: call(2, "greet", `{"name":"Eve"}`), expect: wantTool("Hello, Eve!", false)}, sid)
		do(fastStep{name: "initialized", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}, sid)
	}
	for _, s := range steps {
		do(s, sid)
	}
	return out
}

// TestFastToolCallsMatchTheSDKPath sends the same raw requests to servers with the
// fast path on and off and compares the decoded answers.
func TestFastToolCallsMatchTheSDKPath(t *testing.T) {
	t.Parallel()
	comp := fastTestServers(t, newSlowProbe())
	for _, stateless := range []bool{false, true} {
		suffix := map[bool]string{false: "", true: "-stateless"}[stateless]
		t.Run("stateless="+fmt.Sprint(stateless), func(t *testing.T) {
			var want uint64
			for _, s := range equivalenceSteps {
				if s.fast {
					want++
				}
			}
			if !stateless {
				want++ // the call before notifications/initialized
			}
			before := fastServed(comp, "fast"+suffix)
			fast := runSequence(t, serverURL(t, comp, "fast"+suffix, "/mcp"), stateless, equivalenceSteps)
			if got := fastServed(comp, "fast"+suffix) - before; got != want {
				t.Errorf("the fast path answered %d calls, want %d", got, want)
			}
			slow := runSequence(t, serverURL(t, comp, "sdk"+suffix, "/mcp"), stateless, equivalenceSteps)
			if n := fastServed(comp, "sdk"+suffix); n != 0 {
				t.Errorf("the disabled fast path answered %d calls", n)
			}
			if len(fast) != len(slow) {
				t.Fatalf("%d answers against %d", len(fast), len(slow))
			}
			for i := range fast {
				if !reflect.DeepEqual(fast[i], slow[i]) {
					t.Errorf("answer %d differs:\nfast: %+v\nsdk:  %+v", i, fast[i], slow[i])
				}
			}
		})
	}
}

// sessionFor initializes a session on url with the bearer token the test servers
// accept.
func sessionFor(t *testing.T, url string) map[string]string {
	t.Helper()
	hdr := map[string]string{"Authorization": "Bearer plain"}
	r := send(t, http.MethodPost, url, hdr, initializeBody)
	if r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	hdr["Mcp-Session-Id"] = r.header.Get("Mcp-Session-Id")
	if r := send(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	return hdr
}

// sendAsync posts body in the background; the reply arrives on the channel (a
// zero rawReply when ctx ended the request).
func sendAsync(ctx context.Context, url string, hdr map[string]string, body string) <-chan rawReply {
	out := make(chan rawReply, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			out <- rawReply{}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- rawReply{}
			return
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		out <- rawReply{resp.StatusCode, resp.Header, b.String()}
	}()
	return out
}

func awaitReply(t *testing.T, ch <-chan rawReply) rawReply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(testTimeout):
		t.Fatal("no answer")
		return rawReply{}
	}
}

// TestFastToolCallCancellation: notifications/cancelled for a running call
// cancels its context and no result is sent for it, a reused request id is refused
// while it runs, and the answers match the SDK path's.
func TestFastToolCallCancellation(t *testing.T) {
	t.Parallel()
	probe := newSlowProbe()
	comp := fastTestServers(t, probe)
	var answers [2][]decodedReply
	for i, id := range []string{"fast", "sdk"} {
		url := serverURL(t, comp, id, "/mcp")
		hdr := sessionFor(t, url)
		before := fastServed(comp, id)
		slow := sendAsync(testCtx(t), url, hdr, call(50, "slow", `{}`))
		probe.waitStarted(t)
		dup := decodeReply(t, send(t, http.MethodPost, url, hdr, call(50, "greet", `{}`)))
		if dup.Status != http.StatusBadRequest {
			t.Fatalf("%s: reused id: %+v", id, dup)
		}
		if r := send(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":50,"reason":"test"}}`); r.status != http.StatusAccepted {
			t.Fatalf("%s: cancel: %d %s", id, r.status, r.body)
		}
		probe.waitCancelled(t)
		// After the client's cancel no result is sent for the call's id.
		cancelled := decodeReply(t, awaitReply(t, slow))
		if slices.Contains(cancelled.IDs, "50") || len(cancelled.Messages) != 0 {
			t.Errorf("%s: the cancelled call was answered: %+v", id, cancelled)
		}
		answers[i] = append(answers[i], dup, cancelled)
		// The id is free again once the call has ended.
		answers[i] = append(answers[i], decodeReply(t, send(t, http.MethodPost, url, hdr, call(50, "greet", `{}`))))
		if got, want := fastServed(comp, id)-before, map[string]uint64{"fast": 2, "sdk": 0}[id]; got != want {
			t.Errorf("%s: fast path answered %d calls, want %d", id, got, want)
		}
	}
	if !reflect.DeepEqual(answers[0], answers[1]) {
		t.Errorf("answers differ:\nfast: %+v\nsdk:  %+v", answers[0], answers[1])
	}
}

// TestFastToolCallClientDisconnect: a call whose POST goes away is cancelled,
// stateful and stateless, fast path on and off.
func TestFastToolCallClientDisconnect(t *testing.T) {
	t.Parallel()
	probe := newSlowProbe()
	comp := fastTestServers(t, probe)
	for _, id := range []string{"fast", "sdk", "fast-stateless", "sdk-stateless"} {
		t.Run(id, func(t *testing.T) {
			url := serverURL(t, comp, id, "/mcp")
			hdr := map[string]string{"Authorization": "Bearer plain"}
			if !strings.HasSuffix(id, "stateless") {
				hdr = sessionFor(t, url)
			}
			before := fastServed(comp, id)
			ctx, cancel := context.WithCancel(testCtx(t))
			reply := sendAsync(ctx, url, hdr, call(60, "slow", `{}`))
			probe.waitStarted(t)
			cancel()
			probe.waitCancelled(t)
			awaitReply(t, reply)
			if got := fastServed(comp, id) - before; (got == 1) != strings.HasPrefix(id, "fast") {
				t.Errorf("fast path answered %d calls", got)
			}
		})
	}
}

// TestFastToolCallKeepsSessionAlive: a running fast call holds off the idle
// timer, and the session expires once it is idle again.
func TestFastToolCallKeepsSessionAlive(t *testing.T) {
	t.Parallel()
	probe := newSlowProbe()
	hc := newTestContext(t, fastWorkflows(probe)...)
	comp := startContext(t, hc, Options{ID: "s", Addr: "127.0.0.1:0", SessionIdleTimeout: 100 * time.Millisecond})
	url := serverURL(t, comp, "s", "/mcp")
	hdr := sessionFor(t, url)
	delete(hdr, "Authorization")
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	reply := sendAsync(ctx, url, hdr, call(70, "slow", `{}`))
	probe.waitStarted(t)
	time.Sleep(500 * time.Millisecond) // five idle timeouts while the call runs
	d := decodeReply(t, send(t, http.MethodPost, url, hdr, call(71, "greet", `{"name":"Ada"}`)))
	if d.Status != http.StatusOK {
		t.Fatalf("session gone while a call ran: %+v", d)
	}
	wantTool("Hello, Ada!", false)(t, d)
	cancel()
	probe.waitCancelled(t)
	awaitReply(t, reply)
	deadline := time.Now().Add(testTimeout)
	for send(t, http.MethodPost, url, hdr, call(72, "greet", `{}`)).status != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("the idle session was never closed")
		}
		time.Sleep(300 * time.Millisecond) // each probe is activity: wait longer than the timeout
	}
	if n := fastServed(comp, "s"); n < 3 {
		t.Errorf("fast path answered %d calls, want at least 3", n)
	}
}

// TestFastToolCallStop: Stop waits for a running fast call, refuses new ones with
// the shutting-down tool error, and the running call's answer still goes out.
func TestFastToolCallStop(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	hc := newTestContext(t, greetWorkflow(), &engine.Workflow{ID: "busy", FromURI: "direct://busy",
		Processors: step(func(ctx context.Context, ex *exchange.Exchange) error {
			close(entered)
			<-release
			ex.In().SetBody("finished")
			return nil
		})})
	comp := New(hc)
	hc.AddComponent("mcp-server", comp)
	// Served by a trigger, so it stops with the consumers, before the engine drains
	// (a declared server keeps serving during the drain).
	const id = "mcp-server://127.0.0.1:0"
	if err := hc.AddWorkflow(&engine.Workflow{ID: "srv", FromURI: id}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	url := serverURL(t, comp, id, "/mcp")
	hdr := sessionFor(t, url)
	delete(hdr, "Authorization")
	busy := sendAsync(testCtx(t), url, hdr, call(80, "busy", `{}`))
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- hc.Stop(testCtx(t)) }()
	deadline := time.Now().Add(testTimeout)
	for {
		r := send(t, http.MethodPost, url, hdr, call(81, "greet", `{}`))
		if r.status == http.StatusOK && strings.Contains(r.body, "shutting down") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls still accepted while stopping: %d %s", r.status, r.body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	served := fastServed(comp, id)
	close(release)
	wantTool("finished", false)(t, decodeReply(t, awaitReply(t, busy)))
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
	if served < 2 {
		t.Errorf("fast path answered %d calls, want at least 2", served)
	}
}
