package exchanges_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/console/capture"
	"github.com/arvenza/helix/internal/console/exchanges"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

type step struct {
	name string
	f    func(ctx context.Context, ex *exchange.Exchange) error
}

func (s step) Name() string                                             { return s.name }
func (s step) Process(ctx context.Context, ex *exchange.Exchange) error { return s.f(ctx, ex) }

// replayer runs a capture's input through hc as pkg/app does.
type replayer struct {
	hc *engine.Context
	c  *capture.Capture
}

func (r replayer) Replay(ctx context.Context, rec *capture.Exchange, by string) (string, error) {
	snap, err := exchange.DecodeSnapshot(r.c.ReplayInput(rec))
	if err != nil {
		return "", err
	}
	ex := exchange.NewFromSnapshot(snap)
	ex.In().SetHeader(capture.HeaderReplayOf, rec.ID)
	t := &capture.ReplayTicket{Of: rec.ID, By: by}
	err = r.hc.Run(capture.WithReplay(ctx, t), rec.Workflow, ex)
	return t.ID, err
}

// The configured secret the pages must never show.
const configured = "exchanges-page-s3cret-9f2"

func init() { redact.AddSecret(configured) }

type fixture struct {
	srv *httptest.Server
	c   *capture.Capture
	hc  *engine.Context
}

// newFixture serves the Exchanges page over a capture of a real engine, with
// "Bearer viewer" and "Bearer operator" as its users.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := capture.New(capture.Options{BodyLimit: 256, PerSecond: -1})
	hc := engine.NewContext("page-test")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	greet := step{"quickstart.yaml:36:9 transform", func(_ context.Context, ex *exchange.Exchange) error {
		in, _ := ex.In().Body().(map[string]any)
		name, _ := in["name"].(string)
		if name == "" {
			return errors.New("no name given")
		}
		ex.In().SetBody(map[string]any{"greeting": "Hello, " + name + "!"})
		return nil
	}}
	for _, id := range []string{"greet", "other"} {
		if err := hc.AddWorkflow(&engine.Workflow{ID: id, FromURI: "direct://" + id, Processors: []engine.Processor{greet}}); err != nil {
			t.Fatal(err)
		}
	}
	hc.SetTracer(c)
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Stop(context.Background()) })
	auth := console.AuthenticatorFunc(func(r *http.Request) (console.Principal, error) {
		switch r.Header.Get("Authorization") {
		case "Bearer viewer":
			return console.Principal{Name: "vera", Role: console.RoleViewer}, nil
		case "Bearer operator":
			return console.Principal{Name: "otto", Role: console.RoleOperator}, nil
		}
		return console.Principal{}, errors.New("no credentials")
	})
	m := console.NewMux(console.Options{Auth: auth, Pages: []console.Page{*exchanges.Page(c, replayer{hc, c})}})
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, c: c, hc: hc}
}

func (f *fixture) run(t *testing.T, workflow string, body any, headers map[string]string) {
	t.Helper()
	ex := exchange.NewWithBody(exchange.InOut, body)
	for k, v := range headers {
		ex.In().SetHeader(k, v)
	}
	_ = f.hc.Run(context.Background(), workflow, ex)
}

func (f *fixture) do(t *testing.T, method, path, who string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+who)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (f *fixture) newest(t *testing.T) *capture.Exchange {
	t.Helper()
	l, _ := f.c.List(capture.Filter{}, 1)
	if len(l) == 0 {
		t.Fatal("nothing captured")
	}
	return l[0]
}

// The list shows the captured exchanges newest first with their state in
// words, filters them by query parameters (linkable), and refuses a bad
// filter with a message saying what it accepts.
func TestListAndFilters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run(t, "greet", map[string]any{"name": "Ada"}, nil)
	f.run(t, "greet", map[string]any{}, nil)
	f.run(t, "other", map[string]any{"name": "Bo"}, nil)
	code, body, _ := f.do(t, "GET", "/console/exchanges", "viewer")
	if code != 200 || !strings.Contains(body, "Showing <span id=\"exchange-shown\">3</span> of <span id=\"exchange-total\">3</span>") {
		t.Fatalf("list: %d\n%s", code, body)
	}
	if strings.Index(body, ">other<") > strings.Index(body, ">greet<") {
		t.Error("not newest first")
	}
	for _, want := range []string{">failed<", ">ok<", "no name given", `data-feed="/console/exchanges/feed"`, "exchanges.js"} {
		if !strings.Contains(body, want) {
			t.Errorf("list lacks %q", want)
		}
	}
	_, body, _ = f.do(t, "GET", "/console/exchanges?status=failed&workflow=greet", "viewer")
	if !strings.Contains(body, "Showing <span id=\"exchange-shown\">1</span> of <span id=\"exchange-total\">1</span>") || strings.Contains(body, ">other<") ||
		!strings.Contains(body, `data-feed="/console/exchanges/feed?status=failed&amp;workflow=greet"`) {
		t.Errorf("filtered list:\n%s", body)
	}
	code, body, _ = f.do(t, "GET", "/console/exchanges?status=%3Cscript%3Ealert(1)%3C/script%3E", "viewer")
	if code != 400 || !strings.Contains(body, `the status filter must be &#34;ok&#34; or &#34;failed&#34;`) || strings.Contains(body, "<script>alert") {
		t.Errorf("bad status: %d\n%s", code, body)
	}
	code, _, _ = f.do(t, "GET", "/console/exchanges?workflow="+strings.Repeat("w", 5000), "viewer")
	if code != 400 {
		t.Errorf("a 5000-byte filter: %d", code)
	}
	if code, _, _ := f.do(t, "GET", "/console/exchanges", ""); code != 401 {
		t.Errorf("no credentials: %d", code)
	}
}

// The list is capped whatever the traffic, and says how many it shows of how
// many.
func TestListIsCapped(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for range exchanges.ListLimit + 20 {
		f.run(t, "greet", map[string]any{"name": "x"}, nil)
	}
	_, body, _ := f.do(t, "GET", "/console/exchanges", "viewer")
	if n := strings.Count(body, "<tr data-id="); n != exchanges.ListLimit {
		t.Errorf("%d rows, want %d", n, exchanges.ListLimit)
	}
	if !strings.Contains(body, "Showing <span id=\"exchange-shown\">100</span> of <span id=\"exchange-total\">120</span>") {
		t.Errorf("no count:\n%s", body)
	}
}

// An exchange's page shows its input, each step's before and after, the
// error with the step path, "truncated" and "redacted" as words, and never a
// secret.
func TestDetailShowsStepsAndHidesSecrets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run(t, "greet", map[string]any{"name": "Ada", "password": "pw-visible?", "note": configured, "pad": strings.Repeat("p", 400)},
		map[string]string{"Authorization": "Bearer caller-token", "Accept": "application/json"})
	rec := f.newest(t)
	code, body, _ := f.do(t, "GET", "/console/exchanges/"+rec.ID, "viewer")
	if code != 200 {
		t.Fatalf("detail: %d\n%s", code, body)
	}
	for _, want := range []string{"Before", "After", "step 1 (quickstart.yaml:36:9 transform)", "Hello, Ada!", "<strong>truncated</strong>",
		"<strong>redacted</strong>", "<em>redacted</em>", "application/json"} {
		if !strings.Contains(body, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
	// A viewer is not told about replay as an action: no form at all.
	if strings.Contains(body, "/replay\"") || strings.Contains(body, `id="replay"`) {
		t.Error("a viewer sees a replay form")
	}
	_, opBody, _ := f.do(t, "GET", "/console/exchanges/"+rec.ID, "operator")
	if !strings.Contains(opBody, "This exchange cannot be replayed: its input was truncated in the capture.") || strings.Contains(opBody, `id="replay"`) {
		t.Errorf("operator's page of a truncated input:\n%s", opBody)
	}
	for _, secret := range []string{"pw-visible?", configured, "caller-token"} {
		if strings.Contains(body+opBody, secret) {
			t.Errorf("the page shows %q", secret)
		}
	}
	f.run(t, "greet", map[string]any{}, nil)
	failed := f.newest(t)
	_, body, _ = f.do(t, "GET", "/console/exchanges/"+failed.ID, "viewer")
	if !strings.Contains(body, "at step 1 (quickstart.yaml:36:9 transform):") || !strings.Contains(body, "no name given") ||
		!strings.Contains(body, `id="exchange-status" class="bad">failed<`) {
		t.Errorf("failed exchange page:\n%s", body)
	}
	if code, body, _ := f.do(t, "GET", "/console/exchanges/999999", "viewer"); code != 404 || !strings.Contains(body, "No captured exchange 999999") {
		t.Errorf("unknown id: %d %s", code, body)
	}
	if code, _, _ := f.do(t, "GET", "/console/exchanges/"+url.PathEscape("<x>"+strings.Repeat("9", 3000)), "viewer"); code != 404 {
		t.Errorf("hostile id: %d", code)
	}
}

// An operator replays an exchange whose input was captured whole: the new
// exchange runs through the workflow, is marked as a replay, and the
// operator lands on its page. A viewer gets 403 and no button; an exchange
// whose input was truncated cannot be replayed and the page says why.
func TestReplay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run(t, "greet", map[string]any{"name": "Ada"}, map[string]string{"X-Trace": "t1"})
	orig := f.newest(t)
	if code, _, _ := f.do(t, "POST", "/console/exchanges/"+orig.ID+"/replay", "viewer"); code != 403 {
		t.Fatalf("viewer replay: %d", code)
	}
	if _, n := f.c.List(capture.Filter{}, 10); n != 1 {
		t.Fatalf("a refused replay ran: %d captures", n)
	}
	_, body, _ := f.do(t, "GET", "/console/exchanges/"+orig.ID, "operator")
	if !strings.Contains(body, `id="replay"`) {
		t.Fatalf("operator has no replay button:\n%s", body)
	}
	code, _, h := f.do(t, "POST", "/console/exchanges/"+orig.ID+"/replay", "operator")
	if code != http.StatusSeeOther {
		t.Fatalf("operator replay: %d", code)
	}
	replay := f.newest(t)
	if replay.ID == orig.ID || replay.ReplayOf != orig.ID || replay.Principal != "console: otto" {
		t.Fatalf("replay capture: %+v", replay)
	}
	if want := "/console/exchanges/" + replay.ID + "?replayed=" + orig.ID; h.Get("Location") != want {
		t.Errorf("redirect to %q, want %q", h.Get("Location"), want)
	}
	if replay.Input.Body != orig.Input.Body || replay.Steps[0].After.Body != `{"greeting":"Hello, Ada!"}` {
		t.Errorf("replayed %q → %q", replay.Input.Body, replay.Steps[0].After.Body)
	}
	var marked bool
	for _, hd := range replay.Input.Headers {
		marked = marked || (hd.Name == capture.HeaderReplayOf && hd.Value == orig.ID)
	}
	if !marked {
		t.Errorf("replay headers %+v", replay.Input.Headers)
	}
	_, body, _ = f.do(t, "GET", "/console/exchanges/"+replay.ID, "viewer")
	if !strings.Contains(body, `replay of <a href="/console/exchanges/`+orig.ID+`">`) {
		t.Errorf("replay page does not link the original:\n%s", body)
	}
	f.run(t, "greet", map[string]any{"name": strings.Repeat("n", 1000)}, nil)
	big := f.newest(t)
	code, body, _ = f.do(t, "POST", "/console/exchanges/"+big.ID+"/replay", "operator")
	if code != http.StatusConflict || !strings.Contains(body, "cannot be replayed: its input was truncated") {
		t.Errorf("replay of a truncated input: %d\n%s", code, body)
	}
	// Another site cannot make an operator's browser replay.
	req, _ := http.NewRequest("POST", f.srv.URL+"/console/exchanges/"+orig.ID+"/replay", nil)
	req.Header.Set("Authorization", "Bearer operator")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("cross-origin replay: %d", resp.StatusCode)
	}
}

// The live feed streams the exchanges that end after it opened and match its
// filter, as JSON rows, and never a secret.
func TestFeedStreamsMatchingExchanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/console/exchanges/feed?workflow=greet", nil)
	req.Header.Set("Authorization", "Bearer viewer")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() (event, data string) {
		for lines.Scan() {
			l := lines.Text()
			switch {
			case strings.HasPrefix(l, "event: "):
				event = l[len("event: "):]
			case strings.HasPrefix(l, "data: "):
				data = l[len("data: "):]
			case l == "" && event != "":
				return event, data
			}
		}
		t.Fatalf("feed ended: %v", lines.Err())
		return "", ""
	}
	if ev, _ := next(); ev != "ready" {
		t.Fatalf("first event %q", ev)
	}
	f.run(t, "other", map[string]any{"name": "skip"}, nil)
	f.run(t, "greet", map[string]any{"name": configured}, nil)
	ev, data := next()
	if ev != "exchange" || !strings.Contains(data, `"workflow":"greet"`) || !strings.Contains(data, `"status":"ok"`) {
		t.Fatalf("event %q %s", ev, data)
	}
	if strings.Contains(data, configured) {
		t.Error("the feed carries a secret")
	}
	if code, _, _ := f.do(t, "GET", "/console/exchanges/feed?status=maybe", "viewer"); code != 400 {
		t.Errorf("bad feed filter: %d", code)
	}
}
