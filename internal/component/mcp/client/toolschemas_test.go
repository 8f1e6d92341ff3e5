package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// headerTools are a tool with a valid x-mcp-header annotation and tools whose
// annotations break one rule each.
var headerTools = []map[string]any{
	{"name": "valid_tool", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{
		"region": map[string]any{"type": "string", "x-mcp-header": "Region"},
		"query":  map[string]any{"type": "string"},
	}}},
	{"name": "object_header", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{
		"data": map[string]any{"type": "object", "x-mcp-header": "Data"},
	}}},
	{"name": "space_header", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{
		"value": map[string]any{"type": "string", "x-mcp-header": "My Region"},
	}}},
	{"name": "duplicate_header", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{
		"a": map[string]any{"type": "string", "x-mcp-header": "MyField"},
		"b": map[string]any{"type": "string", "x-mcp-header": "myfield"},
	}}},
}

func newModernConn(t *testing.T, ws *wireServer) *Conn {
	t.Helper()
	c, err := NewConn(Config{Endpoint: ws.url, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestCallCarriesMcpParamHeaders: an mcp:// call that never listed the tools still
// sends the Mcp-Param header the tool's schema asks for, because the Conn lists the
// tools of a modern session before the first call, once.
func TestCallCarriesMcpParamHeaders(t *testing.T) {
	t.Parallel()
	ws := newWireServer(t, headerTools, nil)
	c := newModernConn(t, ws)
	ctx := context.Background()
	for range 2 {
		if _, err := c.CallTool(ctx, "valid_tool", map[string]any{"region": "us-west1", "query": "q"}); err != nil {
			t.Fatal(err)
		}
	}
	calls := ws.requests("tools/call")
	if len(calls) != 2 {
		t.Fatalf("server saw %d calls, want 2 (%v)", len(calls), ws.methods())
	}
	for _, call := range calls {
		if got := call.Header.Get("Mcp-Param-Region"); got != "us-west1" {
			t.Errorf("Mcp-Param-Region = %q, want us-west1", got)
		}
		if got := call.Header.Get("Mcp-Param-Query"); got != "" {
			t.Errorf("unannotated argument sent as Mcp-Param-Query: %q", got)
		}
	}
	if n := len(ws.requests("tools/list")); n != 1 {
		t.Errorf("tools listed %d times for two calls, want once (%v)", n, ws.methods())
	}
}

// TestToolListRefreshedAfterTTL: a list older than toolSchemaTTL is listed again, so
// a tool whose annotations changed gets the new headers.
func TestToolListRefreshedAfterTTL(t *testing.T) {
	t.Parallel()
	ws := newWireServer(t, headerTools, nil)
	c := newModernConn(t, ws)
	var skew atomic.Int64 // how far the Conn's clock is ahead
	c.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "valid_tool", map[string]any{"region": "a"}); err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(toolSchemaTTL))
	if _, err := c.CallTool(ctx, "valid_tool", map[string]any{"region": "b"}); err != nil {
		t.Fatal(err)
	}
	if n := len(ws.requests("tools/list")); n != 2 {
		t.Errorf("tools listed %d times, want 2: once more after the TTL (%v)", n, ws.methods())
	}
}

// TestInvalidHeaderToolsRefusedLocally: a tool with an invalid x-mcp-header
// annotation is neither listed nor called; the call fails without reaching the
// server, with an error that names the tool and the broken property.
func TestInvalidHeaderToolsRefusedLocally(t *testing.T) {
	t.Parallel()
	ws := newWireServer(t, headerTools, nil)
	c := newModernConn(t, ws)
	ctx := context.Background()
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Name != "valid_tool" {
		names := []string{}
		for _, tl := range tools {
			names = append(names, tl.Name)
		}
		t.Errorf("listed %v, want only valid_tool", names)
	}
	for tool, want := range map[string]string{
		"object_header":    `property "data": x-mcp-header is only allowed on string, integer and boolean properties, not "object"`,
		"space_header":     `x-mcp-header "My Region" has the character ' '`,
		"duplicate_header": `properties "a" and "b" both use x-mcp-header "myfield"`,
	} {
		_, err := c.CallTool(ctx, tool, map[string]any{"data": map[string]any{}})
		var ite *InvalidToolError
		if !errors.As(err, &ite) {
			t.Fatalf("%s: error %v, want an InvalidToolError", tool, err)
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "call "+tool+" on "+ws.url) {
			t.Errorf("%s: error %q, want it to name the tool and say %q", tool, err, want)
		}
	}
	if calls := ws.requests("tools/call"); len(calls) != 0 {
		t.Errorf("the server got %d calls of invalid tools", len(calls))
	}
}

func TestHeaderAnnotationProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		schema any
		want   string
	}{
		{map[string]any{"properties": map[string]any{"x": map[string]any{"type": "number", "x-mcp-header": "X"}}}, `not "number"`},
		{map[string]any{"properties": map[string]any{"x": map[string]any{"x-mcp-header": "X"}}}, "not an untyped one"},
		{map[string]any{"properties": map[string]any{"x": map[string]any{"type": "string", "x-mcp-header": ""}}}, "must be a non-empty string"},
		{map[string]any{"properties": map[string]any{"x": map[string]any{"type": "string", "x-mcp-header": 7}}}, "must be a non-empty string"},
		{map[string]any{"properties": map[string]any{"x": map[string]any{"type": "string", "x-mcp-header": "Région"}}}, `character 'é'`},
		{map[string]any{"properties": map[string]any{"o": map[string]any{"type": "object", "properties": map[string]any{
			"x": map[string]any{"type": "boolean", "x-mcp-header": "Bad:Name"}}}}}, `property "o.x"`},
		{"not a schema", "cannot be read"},
	} {
		if got := headerAnnotationProblem(tc.schema); !strings.Contains(got, tc.want) {
			t.Errorf("headerAnnotationProblem(%v) = %q, want it to contain %q", tc.schema, got, tc.want)
		}
	}
}

// TestListedToolsServeTheFirstCall: an agent lists the tools, then calls one: the
// listing is the one the call needs, so tools/list goes once.
func TestListedToolsServeTheFirstCall(t *testing.T) {
	t.Parallel()
	ws := newWireServer(t, headerTools, nil)
	c := newModernConn(t, ws)
	ctx := context.Background()
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "valid_tool", map[string]any{"region": "eu"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "object_header", nil); !isInvalidTool(err) {
		t.Errorf("object_header: %v, want an InvalidToolError", err)
	}
	if n := len(ws.requests("tools/list")); n != 1 {
		t.Errorf("tools/list sent %d times, want once (%v)", n, ws.methods())
	}
	if got := ws.requests("tools/call")[0].Header.Get("Mcp-Param-Region"); got != "eu" {
		t.Errorf("Mcp-Param-Region = %q, want eu", got)
	}
}

// TestRefreshFromTheSDKCacheKeepsRefusals: when the server lets the go-sdk cache
// its tool list for longer than toolSchemaTTL, a refresh is answered from that cache
// without a request: the invalid tools stay refused.
func TestRefreshFromTheSDKCacheKeepsRefusals(t *testing.T) {
	t.Parallel()
	ws := newWireServer(t, headerTools, nil)
	ws.ttlMs.Store(int64(time.Hour / time.Millisecond))
	c := newModernConn(t, ws)
	var skew atomic.Int64
	c.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "object_header", nil); !isInvalidTool(err) {
		t.Fatalf("first call: %v, want an InvalidToolError", err)
	}
	skew.Store(int64(toolSchemaTTL))
	if _, err := c.CallTool(ctx, "object_header", nil); !isInvalidTool(err) {
		t.Fatalf("after the refresh: %v, want an InvalidToolError", err)
	}
	if n := len(ws.requests("tools/list")); n != 1 {
		t.Errorf("tools/list sent %d times, want once: the refresh comes from the SDK's cache (%v)", n, ws.methods())
	}
	if calls := ws.requests("tools/call"); len(calls) != 0 {
		t.Errorf("an invalid tool was called")
	}
}

// TestEndlessToolPagesEndTheListing: a server that always names a next page does not
// hold the listing (nor the call after it) until the timeout.
func TestEndlessToolPagesEndTheListing(t *testing.T) {
	t.Parallel()
	var page atomic.Int64
	ws := newWireServer(t, nil, func(w http.ResponseWriter, _ *http.Request, msg *wireMsg) bool {
		if msg.Method != "tools/list" {
			return false
		}
		n := page.Add(1)
		writeResult(w, msg.ID, map[string]any{"resultType": "complete", "tools": []any{
			map[string]any{"name": fmt.Sprintf("t%d", n), "inputSchema": map[string]any{"type": "object"}}},
			"nextCursor": fmt.Sprint(n)})
		return true
	})
	c := newModernConn(t, ws)
	_, err := c.ListTools(context.Background())
	if err == nil || !strings.Contains(err.Error(), "more than 1000 pages") {
		t.Fatalf("ListTools: %v, want the page limit", err)
	}
}

// TestCallDoesNotWaitOutAnotherCallsListing: while one call lists the tools of a slow
// server, another call gives up when its own context ends, not when the listing does.
func TestCallDoesNotWaitOutAnotherCallsListing(t *testing.T) {
	t.Parallel()
	listing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ws := newWireServer(t, headerTools, func(w http.ResponseWriter, r *http.Request, msg *wireMsg) bool {
		if msg.Method == "tools/list" {
			once.Do(func() { close(listing) })
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		return false
	})
	c := newModernConn(t, ws)
	first := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.Background(), "valid_tool", map[string]any{"region": "a"})
		first <- err
	}()
	<-listing
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.CallTool(ctx, "valid_tool", map[string]any{"region": "b"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second call: %v, want its own deadline", err)
	}
	select {
	case err := <-first:
		t.Fatalf("the first call ended (%v) before its listing was released", err)
	default:
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first call: %v", err)
	}
}
