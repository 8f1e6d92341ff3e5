package traces_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/console/traces"
)

func serve(t *testing.T, s *traces.Store) *httptest.Server {
	t.Helper()
	m := console.NewMux(console.Options{Auth: console.AuthenticatorFunc(func(r *http.Request) (console.Principal, error) {
		return console.Principal{Name: "tester"}, nil
	}), Pages: []console.Page{traces.NewPage(s)}})
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Without tracing the page says how to switch it on, on every route.
func TestTracesPageWhenTracingIsOff(t *testing.T) {
	t.Parallel()
	srv := serve(t, nil)
	for _, p := range []string{"/console/traces", "/console/traces/0af7651916cd43dd8448eb211c80319c", "/console/traces?exchange=x"} {
		resp, body := get(t, http.DefaultClient, srv.URL+p)
		if resp.StatusCode != 200 || !strings.Contains(body, "Tracing is off") || !strings.Contains(body, "exporter: otlp") {
			t.Errorf("%s: %d %s", p, resp.StatusCode, body)
		}
	}
}

// /traces?exchange=ID (the Exchanges page's link) goes to the trace of that
// exchange; an exchange without a kept trace gets a page that says so.
func TestTracesByExchange(t *testing.T) {
	t.Parallel()
	s := traces.NewStore(traces.Limits{})
	tr := provider(t, s)
	sc := exchangeTrace(tr, "ex-42")
	srv := serve(t, s)
	resp, _ := get(t, noRedirect, srv.URL+"/console/traces?exchange=ex-42")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/traces/"+sc.TraceID().String() {
		t.Fatalf("redirect: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := get(t, http.DefaultClient, srv.URL+"/console/traces?exchange=%3Cscript%3Ex")
	if resp.StatusCode != 200 || !strings.Contains(body, "No trace is kept for exchange") || strings.Contains(body, "<script>x") {
		t.Fatalf("missing exchange: %d %s", resp.StatusCode, body)
	}
	// The waterfall: spans nested, the failing step marked as an error in
	// words, the exchange linked.
	_, body = get(t, http.DefaultClient, srv.URL+"/console/traces/"+sc.TraceID().String())
	for _, want := range []string{`id="waterfall"`, "workflow greet", "step set-body", "step to <strong class=\"bad\">(error)</strong>",
		`href="/console/exchanges/ex-42"`, `style="left: 0.00%; width: 100.00%"`, `data-depth="1"`} {
		if !strings.Contains(body, want) {
			t.Errorf("waterfall lacks %q", want)
		}
	}
}

func TestTracesPageResistsBadInput(t *testing.T) {
	t.Parallel()
	s := traces.NewStore(traces.Limits{})
	tr := provider(t, s)
	for range 60 {
		exchangeTrace(tr, "e")
	}
	srv := serve(t, s)
	for _, p := range []string{"/console/traces?page=99999999999999999999", "/console/traces?page=-1", "/console/traces/%3Cimg%3E", "/console/traces/../../etc"} {
		resp, body := get(t, http.DefaultClient, srv.URL+p)
		if resp.StatusCode >= 500 || strings.Contains(body, "<img>") {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
	}
	_, body := get(t, http.DefaultClient, srv.URL+"/console/traces")
	if !strings.Contains(body, "Showing traces 1–50 of 60") || !strings.Contains(body, "Older traces") {
		t.Errorf("first page: %s", body)
	}
	_, body = get(t, http.DefaultClient, srv.URL+"/console/traces?page=7")
	if !strings.Contains(body, "Showing traces 51–60 of 60") {
		t.Errorf("beyond the last page: %s", body)
	}
	_, body = get(t, http.DefaultClient, srv.URL+"/console/traces/0af7651916cd43dd8448eb211c80319c")
	if !strings.Contains(body, "is not kept") {
		t.Errorf("missing trace: %s", body)
	}
}
