package httpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/component/httpserver"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// serve starts one consumer of comp on raw with processor p and returns the base URL.
func serve(t *testing.T, comp *httpserver.Component, raw string, p component.ProcessorFunc) string {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := comp.CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ep.CreateConsumer(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	addr, ok := comp.Addr(u.Host)
	if !ok {
		t.Fatalf("no listener for %s", u.Host)
	}
	return "http://" + addr.String()
}

type response struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, client *http.Client, method, url, contentType, body string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(b)}
}

func TestRequestToExchange(t *testing.T) {
	comp := httpserver.New(nil)
	got := make(chan *exchange.Exchange, 1)
	base := serve(t, comp, "http-server://127.0.0.1:0/in", func(_ context.Context, ex *exchange.Exchange) error {
		got <- ex.Copy()
		return nil
	})
	client := testClient(t)
	tests := []struct {
		name, method, ct, body, query string
		headers                       []string
		want                          any
	}{
		{"json object", "POST", "application/json", `{"a":1}`, "", nil, map[string]any{"a": 1.0}},
		{"json list with charset", "PUT", "application/json; charset=utf-8", `[1,"x"]`, "", nil, []any{1.0, "x"}},
		{"invalid json labelled text stays text", "POST", "text/plain", `{oops`, "", nil, "{oops"},
		{"text", "POST", "text/plain", "hello", "a=1&b=two", nil, "hello"},
		{"empty body is nil", "GET", "", "", "q=x", nil, nil},
		{"forged Helix headers dropped", "POST", "text/plain", "x", "", []string{"HelixHttpResponseCode", "201", "HelixMcpToolName", "evil"}, "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url := base + "/in"
			if tc.query != "" {
				url += "?" + tc.query
			}
			r := do(t, client, tc.method, url, tc.ct, tc.body, append(tc.headers, "X-Req", "r1")...)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			ex := <-got
			if fmt.Sprint(ex.In().Body()) != fmt.Sprint(tc.want) || (tc.want == nil) != (ex.In().Body() == nil) {
				t.Fatalf("body %#v, want %#v", ex.In().Body(), tc.want)
			}
			h := ex.In()
			if ex.Pattern() != exchange.InOut || h.HeaderString(httpserver.HeaderHTTPMethod) != tc.method ||
				h.HeaderString(httpserver.HeaderHTTPPath) != "/in" || h.HeaderString(httpserver.HeaderHTTPQuery) != tc.query ||
				h.HeaderString("X-Req") != "r1" {
				t.Fatalf("headers %v", h.Headers())
			}
			if h.Header(exchange.HeaderHTTPResponseCode) != nil || h.Header(exchange.HeaderMcpToolName) != nil || h.Header("Helixmcptoolname") != nil {
				t.Fatalf("a client forged a Helix header: %v", h.Headers())
			}
		})
	}
}

func TestExchangeToResponse(t *testing.T) {
	comp := httpserver.New(nil)
	tests := []struct {
		name       string
		reqCT      string
		process    func(ex *exchange.Exchange) error
		wantStatus int
		wantCT     string
		wantBody   string
		wantHeader [2]string
	}{
		{"map as JSON", "text/plain", func(ex *exchange.Exchange) error {
			ex.In().SetBody(map[string]any{"ok": true})
			return nil
		}, 200, "application/json", `{"ok":true}`, [2]string{}},
		{"string as text", "", func(ex *exchange.Exchange) error { ex.In().SetBody("hi"); return nil }, 200, "text/plain; charset=utf-8", "hi", [2]string{}},
		{"number as JSON", "", func(ex *exchange.Exchange) error { ex.In().SetBody(42); return nil }, 200, "application/json", "42", [2]string{}},
		{"status from int header", "", func(ex *exchange.Exchange) error {
			ex.In().SetHeader(exchange.HeaderHTTPResponseCode, 201)
			ex.In().SetBody("made")
			return nil
		}, 201, "text/plain; charset=utf-8", "made", [2]string{}},
		{"status from string header", "", func(ex *exchange.Exchange) error {
			ex.In().SetHeader(exchange.HeaderHTTPResponseCode, "404")
			return nil
		}, 404, "", "", [2]string{}},
		{"status from JSON number", "", func(ex *exchange.Exchange) error {
			ex.In().SetHeader(exchange.HeaderHTTPResponseCode, 202.0)
			return nil
		}, 202, "", "", [2]string{}},
		{"bad status header is a 500", "", func(ex *exchange.Exchange) error {
			ex.In().SetHeader(exchange.HeaderHTTPResponseCode, "teapot")
			return nil
		}, 500, "application/json", `{"error":"header HelixHttpResponseCode=\"teapot\" is not a status code"}`, [2]string{}},
		{"workflow Content-Type wins", "application/json", func(ex *exchange.Exchange) error {
			ex.In().SetHeader("Content-Type", "text/markdown")
			ex.In().SetBody(map[string]any{"a": 1})
			return nil
		}, 200, "text/markdown", `{"a":1}`, [2]string{}},
		{"inherited JSON type kept for a JSON string (write())", "application/json", func(ex *exchange.Exchange) error {
			ex.In().SetBody(`{"x":1}`)
			return nil
		}, 200, "application/json", `{"x":1}`, [2]string{}},
		{"inherited JSON type dropped for plain text", "application/json", func(ex *exchange.Exchange) error {
			ex.In().SetBody("not json")
			return nil
		}, 200, "text/plain; charset=utf-8", "not json", [2]string{}},
		{"added headers copied, request ones not echoed", "", func(ex *exchange.Exchange) error {
			ex.In().SetHeader("Location", "/orders/9")
			ex.In().SetHeader("Content-Length", "999")
			return nil
		}, 200, "", "", [2]string{"Location", "/orders/9"}},
		{"error is a JSON 500", "", func(ex *exchange.Exchange) error { return errors.New("validation failed: no id") },
			500, "application/json", `{"error":"validation failed: no id"}`, [2]string{}},
		{"exception is a JSON 500", "", func(ex *exchange.Exchange) error { ex.SetException(errors.New("bad")); return nil },
			500, "application/json", `{"error":"bad"}`, [2]string{}},
		{"panic is a JSON 500", "", func(ex *exchange.Exchange) error { panic("kaboom") },
			500, "application/json", `{"error":"workflow panicked: kaboom"}`, [2]string{}},
	}
	client := testClient(t)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := fmt.Sprintf("/case%d", i)
			base := serve(t, comp, "http-server://127.0.0.1:0"+path, func(_ context.Context, ex *exchange.Exchange) error { return tc.process(ex) })
			r := do(t, client, "POST", base+path, tc.reqCT, "", "X-Echo-Me", "no")
			if r.status != tc.wantStatus || r.body != tc.wantBody {
				t.Fatalf("got %d %q, want %d %q", r.status, r.body, tc.wantStatus, tc.wantBody)
			}
			if tc.wantCT != "" && r.header.Get("Content-Type") != tc.wantCT {
				t.Fatalf("Content-Type %q, want %q", r.header.Get("Content-Type"), tc.wantCT)
			}
			if r.header.Get("X-Echo-Me") != "" {
				t.Fatal("a request header was echoed in the response")
			}
			if k := tc.wantHeader[0]; k != "" && r.header.Get(k) != tc.wantHeader[1] {
				t.Fatalf("header %s=%q, want %q", k, r.header.Get(k), tc.wantHeader[1])
			}
		})
	}
}

func TestRoutingAndLimits(t *testing.T) {
	comp := httpserver.New(nil)
	echo := func(_ context.Context, ex *exchange.Exchange) error { return nil }
	base := serve(t, comp, "http-server://127.0.0.1:0/only-post?httpMethod=POST&maxBodyBytes=16", echo)
	serve(t, comp, "http-server://127.0.0.1:0/only-get?httpMethod=GET", echo)
	serve(t, comp, "http-server://127.0.0.1:0/only-get?httpMethod=DELETE", echo)
	client := testClient(t)
	cases := []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/only-post", "small", 200},
		{"GET", "/only-post", "", 405},
		{"POST", "/only-post", strings.Repeat("x", 17), 413},
		{"GET", "/only-get", "", 200},
		{"DELETE", "/only-get", "", 200},
		{"PUT", "/only-get", "", 405},
		{"GET", "/only-post/sub", "", 404},
		{"GET", "/nothing", "", 404},
	}
	for _, c := range cases {
		r := do(t, client, c.method, base+c.path, "text/plain", c.body)
		if r.status != c.want {
			t.Errorf("%s %s: status %d, want %d (%s)", c.method, c.path, r.status, c.want, r.body)
		}
		if r.status >= 400 {
			var e map[string]string
			if json.Unmarshal([]byte(r.body), &e) != nil || e["error"] == "" {
				t.Errorf("%s %s: error body %q is not {\"error\": …}", c.method, c.path, r.body)
			}
		}
	}
	if r := do(t, client, "PUT", base+"/only-get", "", ""); !strings.Contains(r.header.Get("Allow"), "GET") {
		t.Errorf("405 without Allow header: %v", r.header)
	}
}

func TestEndpointErrors(t *testing.T) {
	comp := httpserver.New(nil)
	for _, raw := range []string{
		"http-server://localhost/x", "http-server:///x", "http-server://h:1/x?maxBodyBytes=0",
		"http-server://h:1/x?maxBodyBytes=lots", "http-server://h:1/x?httpMethod=G-T",
	} {
		u, _ := uri.Parse(raw)
		if _, err := comp.CreateEndpoint(u); err == nil {
			t.Errorf("%s: want an error", raw)
		}
	}
	u, _ := uri.Parse("http-server://h:1/x")
	ep, _ := comp.CreateEndpoint(u)
	if _, err := ep.CreateProducer(); !errors.Is(err, component.ErrConsumerOnly) {
		t.Errorf("CreateProducer: %v", err)
	}
}

// Two workflows on one address share one listener; the same path twice is refused;
// the listener closes with the last workflow.
func TestSharedListenerInEngine(t *testing.T) {
	hc := engine.NewContext("shared")
	comp := httpserver.New(hc.Logger)
	hc.AddComponent("http-server", comp)
	reply := func(s string) engine.Processor {
		return engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody(map[string]any{"from": s})
			return nil
		})
	}
	for _, w := range []*engine.Workflow{
		{ID: "a", FromURI: "http-server://127.0.0.1:0/a", Processors: []engine.Processor{reply("a")}},
		{ID: "b", FromURI: "http-server://127.0.0.1:0/b", Processors: []engine.Processor{reply("b")}},
	} {
		if err := hc.AddWorkflow(w); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	addr, ok := comp.Addr("127.0.0.1:0")
	if !ok {
		t.Fatal("no listener")
	}
	client := testClient(t)
	for _, p := range []string{"a", "b"} {
		r := do(t, client, "GET", "http://"+addr.String()+"/"+p, "", "")
		if r.status != 200 || r.body != `{"from":"`+p+`"}` {
			t.Fatalf("/%s: %d %s", p, r.status, r.body)
		}
	}
	if err := hc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := comp.Addr("127.0.0.1:0"); ok {
		t.Fatal("listener still registered after the last workflow stopped")
	}
	client.CloseIdleConnections()
	if _, err := client.Get("http://" + addr.String() + "/a"); err == nil {
		t.Fatal("listener still accepting after Stop")
	}

	// The same path twice on one address cannot start.
	hc2 := engine.NewContext("dup")
	hc2.AddComponent("http-server", httpserver.New(nil))
	for _, id := range []string{"x", "y"} {
		if err := hc2.AddWorkflow(&engine.Workflow{ID: id, FromURI: "http-server://127.0.0.1:0/same"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := hc2.Start(ctx); err == nil || !strings.Contains(err.Error(), "already served") {
		t.Fatalf("got %v, want an 'already served' error", err)
	}
	_ = hc2.Stop(ctx)
}

func TestAddressInUse(t *testing.T) {
	a := httpserver.New(nil)
	base := serve(t, a, "http-server://127.0.0.1:0/x", func(context.Context, *exchange.Exchange) error { return nil })
	b := httpserver.New(nil)
	u, _ := uri.Parse("http-server://" + strings.TrimPrefix(base, "http://") + "/y")
	ep, err := b.CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := ep.CreateConsumer(component.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return nil }))
	if err := c.Start(context.Background()); err == nil {
		_ = c.Stop(context.Background())
		t.Fatal("second component bound a taken address")
	}
}
