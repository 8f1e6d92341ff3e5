package capture_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/console/capture"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

type step struct {
	name string
	f    func(ctx context.Context, ex *exchange.Exchange) error
}

func (s step) Name() string { return s.name }
func (s step) Process(ctx context.Context, ex *exchange.Exchange) error {
	return s.f(ctx, ex)
}

// engineWith runs workflows in a context traced by c.
func engineWith(t *testing.T, c *capture.Capture, wfs ...*engine.Workflow) *engine.Context {
	t.Helper()
	hc := engine.NewContext("capture-test")
	for _, w := range wfs {
		if err := hc.AddWorkflow(w); err != nil {
			t.Fatal(err)
		}
	}
	hc.SetTracer(c)
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Stop(context.Background()) })
	return hc
}

func setName(v string) step {
	return step{"helix.yaml:7:9 transform", func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody(map[string]any{"greeting": "Hello, " + v})
		return nil
	}}
}

// A captured exchange holds its input, each step's result and timing, and a
// failure names the step it happened in.
func TestCaptureRecordsStepsAndFailures(t *testing.T) {
	t.Parallel()
	c := capture.New(capture.Options{})
	fail := step{"helix.yaml:9:9 script", func(context.Context, *exchange.Exchange) error { return errors.New("no such user") }}
	hc := engineWith(t, c,
		&engine.Workflow{ID: "greet", FromURI: "direct://greet", Processors: []engine.Processor{setName("Ada")}},
		&engine.Workflow{ID: "broken", FromURI: "direct://broken", Processors: []engine.Processor{setName("Bo"), fail}})
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"name": "Ada"})
	ex.In().SetHeader("Content-Type", "application/json")
	if err := hc.Run(context.Background(), "greet", ex); err != nil {
		t.Fatal(err)
	}
	_ = hc.Run(context.Background(), "broken", exchange.NewWithBody(exchange.InOut, "x"))

	list, total := c.List(capture.Filter{}, 10)
	if total != 2 || len(list) != 2 {
		t.Fatalf("kept %d (%d listed), want 2", total, len(list))
	}
	bad, good := list[0], list[1]
	if good.Workflow != "greet" || good.Status != capture.StatusOK || good.Trigger != "direct://greet" {
		t.Fatalf("good: %+v", good)
	}
	if good.Input.Body != `{"name":"Ada"}` || len(good.Input.Headers) != 1 || good.Input.Headers[0].Value != "application/json" {
		t.Fatalf("input: %+v", good.Input)
	}
	if len(good.Steps) != 1 || good.Steps[0].After.Body != `{"greeting":"Hello, Ada"}` {
		t.Fatalf("steps: %+v", good.Steps)
	}
	if !good.Replayable() {
		t.Fatalf("a small whole input is replayable: %q", good.NotReplayable)
	}
	if bad.Status != capture.StatusFailed || !strings.Contains(bad.Error, "no such user") ||
		bad.ErrorStep != "step 2 (helix.yaml:9:9 script)" || len(bad.Steps) != 2 || bad.Steps[1].Error == "" {
		t.Fatalf("failed exchange: status %q error %q at %q, steps %+v", bad.Status, bad.Error, bad.ErrorStep, bad.Steps)
	}
	if got := c.Get(good.ID); got != good {
		t.Fatalf("Get(%s) = %v", good.ID, got)
	}
	if l, n := c.List(capture.Filter{Status: capture.StatusFailed}, 10); n != 1 || l[0] != bad {
		t.Fatalf("status filter: %d", n)
	}
	if _, n := c.List(capture.Filter{Workflow: "greet"}, 10); n != 1 {
		t.Fatalf("workflow filter: %d", n)
	}
}

// A workflow called by another (direct://) is part of its caller's step, not
// an exchange of its own with steps recorded into the caller's.
func TestCaptureNestedWorkflowIsTheCallersStep(t *testing.T) {
	t.Parallel()
	c := capture.New(capture.Options{})
	var hc *engine.Context
	call := step{"helix.yaml:3:9 target", func(ctx context.Context, ex *exchange.Exchange) error {
		return hc.Run(ctx, "inner", ex)
	}}
	hc = engineWith(t, c,
		&engine.Workflow{ID: "outer", Processors: []engine.Processor{call}},
		&engine.Workflow{ID: "inner", Processors: []engine.Processor{setName("x"), setName("y")}})
	if err := hc.Run(context.Background(), "outer", exchange.NewWithBody(exchange.InOut, "in")); err != nil {
		t.Fatal(err)
	}
	list, total := c.List(capture.Filter{}, 10)
	if total != 1 || list[0].Workflow != "outer" || len(list[0].Steps) != 1 {
		t.Fatalf("captures: %d, first %+v", total, list[0])
	}
}

// Secret headers, secret body fields and the process's configured secrets
// never reach a capture, and the capture says it hid something.
func TestCaptureRedactsSecrets(t *testing.T) {
	t.Parallel()
	configured := "cfg-s3cr3t-value-for-capture-test"
	redact.AddSecret(configured)
	c := capture.New(capture.Options{RedactFields: []string{"ssn"}})
	hc := engineWith(t, c, &engine.Workflow{ID: "w", Processors: []engine.Processor{
		step{"s", func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetHeader("X-Upstream-Token", "tok-after-step")
			return nil
		}}}})
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{
		"user": "ada", "password": "pw-in-body", "nested": []any{map[string]any{"api_key": "key-in-list", "ssn": "123-45"}},
		"note": "the value " + configured + " leaked into text",
	})
	for name, v := range map[string]string{"Authorization": "Bearer tok-auth", "Cookie": "sid=cookie-val",
		"X-API-Key": "key-header", "X-Session-Secret": "sec-header", "Accept": "text/plain"} {
		ex.In().SetHeader(name, v)
	}
	if err := hc.Run(context.Background(), "w", ex); err != nil {
		t.Fatal(err)
	}
	list, _ := c.List(capture.Filter{}, 1)
	rec := list[0]
	all := fmt.Sprintf("%+v", *rec)
	for _, secret := range []string{"tok-auth", "cookie-val", "key-header", "sec-header", "pw-in-body", "key-in-list",
		"123-45", configured, "tok-after-step"} {
		if strings.Contains(all, secret) {
			t.Errorf("capture holds %q", secret)
		}
	}
	if !strings.Contains(all, "text/plain") || !strings.Contains(all, "ada") {
		t.Errorf("capture lost what is no secret: %s", all)
	}
	if !rec.Input.Redacted || !rec.Steps[0].After.Redacted {
		t.Errorf("redaction not said: input %v after %v", rec.Input.Redacted, rec.Steps[0].After.Redacted)
	}
}

// A body over the limit is cut at the limit and marked truncated, and such
// an exchange cannot be replayed.
func TestCaptureTruncatesBodies(t *testing.T) {
	t.Parallel()
	c := capture.New(capture.Options{BodyLimit: 100})
	hc := engineWith(t, c, &engine.Workflow{ID: "w", Processors: []engine.Processor{setName("x")}})
	big := strings.Repeat("é", 500)
	for _, body := range []any{big, []byte(big), map[string]any{"text": big}, []any{big, big}} {
		if err := hc.Run(context.Background(), "w", exchange.NewWithBody(exchange.InOut, body)); err != nil {
			t.Fatal(err)
		}
	}
	list, total := c.List(capture.Filter{}, 10)
	if total != 4 {
		t.Fatalf("kept %d", total)
	}
	for _, rec := range list {
		in := rec.Input
		if !in.Truncated || len(in.Body) > 100 || in.BodyBytes <= 100 {
			t.Errorf("%s: truncated %v, %d bytes shown of %d", in.BodyType, in.Truncated, len(in.Body), in.BodyBytes)
		}
		if !strings.HasPrefix(in.Body, `{"text":"éé`) && !strings.HasPrefix(in.Body, "éé") && !strings.HasPrefix(in.Body, `["éé`) {
			t.Errorf("%s: body starts %q", in.BodyType, in.Body[:10])
		}
		if rec.Replayable() || !strings.Contains(rec.NotReplayable, "truncated") {
			t.Errorf("%s: replayable %v (%q)", in.BodyType, rec.Replayable(), rec.NotReplayable)
		}
		if rec.Steps[0].After.Truncated {
			t.Errorf("the small body after the step is not truncated")
		}
	}
}

// Sample 0.25 captures one exchange in four; the per-second cap stops
// capturing for the rest of a second once it is reached.
func TestCaptureSampling(t *testing.T) {
	t.Parallel()
	quarter := capture.New(capture.Options{Sample: 0.25, PerSecond: -1})
	capped := capture.New(capture.Options{PerSecond: 5})
	for _, c := range []*capture.Capture{quarter, capped} {
		hc := engineWith(t, c, &engine.Workflow{ID: "w", Processors: []engine.Processor{setName("x")}})
		for range 40 {
			if err := hc.Run(context.Background(), "w", exchange.NewWithBody(exchange.InOut, "x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, n := quarter.List(capture.Filter{}, 100); n != 10 {
		t.Errorf("sample 0.25 of 40 kept %d, want 10", n)
	}
	// 40 runs may straddle a second boundary: at most two seconds' worth.
	if _, n := capped.List(capture.Filter{}, 100); n < 5 || n > 10 {
		t.Errorf("5 per second kept %d of 40 run at once", n)
	}
	// A replay is captured whatever the sampling.
	none := capture.New(capture.Options{Sample: 0.001, PerSecond: -1})
	hc := engineWith(t, none, &engine.Workflow{ID: "w", Processors: []engine.Processor{setName("x")}})
	tk := &capture.ReplayTicket{Of: "7", By: "ops"}
	if err := hc.Run(capture.WithReplay(context.Background(), tk), "w", exchange.NewWithBody(exchange.InOut, "x")); err != nil {
		t.Fatal(err)
	}
	rec := none.Get(tk.ID)
	if rec == nil || rec.ReplayOf != "7" || rec.Principal != "console: ops" {
		t.Fatalf("replay capture: %+v", rec)
	}
}

// Whatever the flood, the ring's memory stays within max_bytes, and it keeps
// the newest captures.
func TestRingStaysWithinBudget(t *testing.T) {
	t.Parallel()
	const budget = 256 << 10
	c := capture.New(capture.Options{MaxBytes: budget, PerSecond: -1, BodyLimit: 4 << 10})
	blob, grown := strings.Repeat("x", 1<<20), strings.Repeat("y", 1<<20)
	hc := engineWith(t, c, &engine.Workflow{ID: "w", Processors: []engine.Processor{
		step{"grow", func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody(grown)
			return nil
		}}}})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 150 {
				body := map[string]any{"g": g, "i": i, "blob": blob}
				_ = hc.Run(context.Background(), "w", exchange.NewWithBody(exchange.InOut, body))
				if st := c.Stats(); st.Bytes > budget {
					t.Errorf("ring holds %d bytes, budget %d", st.Bytes, budget)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := c.Stats()
	list, total := c.List(capture.Filter{}, 1<<20)
	var sum int64
	for _, e := range list {
		sum += e.Size()
	}
	if sum > budget || st.Bytes != sum || int64(total) != st.Kept || total < 10 {
		t.Fatalf("kept %d captures of %d bytes (stats %+v), budget %d", total, sum, st, budget)
	}
	if list[0].ID == "1" {
		t.Fatal("the newest capture is the first one: nothing was evicted")
	}
	// One capture bigger than the whole budget is dropped, not kept.
	tiny := capture.New(capture.Options{MaxBytes: 1024, PerSecond: -1})
	hc2 := engineWith(t, tiny, &engine.Workflow{ID: "w", Processors: []engine.Processor{setName("x")}})
	_ = hc2.Run(context.Background(), "w", exchange.NewWithBody(exchange.InOut, strings.Repeat("z", 4000)))
	if st := tiny.Stats(); st.Kept != 0 || st.Dropped != 1 {
		t.Fatalf("over-budget capture: %+v", st)
	}
}

// A subscriber that does not read misses captures and is told how many; the
// exchanges themselves never wait for it.
func TestSlowSubscriberMissesWithoutBlocking(t *testing.T) {
	t.Parallel()
	c := capture.New(capture.Options{PerSecond: -1})
	hc := engineWith(t, c, &engine.Workflow{ID: "w", Processors: []engine.Processor{setName("x")}})
	slow := c.Subscribe(2)
	fast := c.Subscribe(100)
	defer slow.Close()
	defer fast.Close()
	for range 50 {
		if err := hc.Run(context.Background(), "w", exchange.NewWithBody(exchange.InOut, "x")); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(fast.C()); got != 50 {
		t.Errorf("fast subscriber got %d of 50", got)
	}
	if got, missed := len(slow.C()), slow.Missed(); got != 2 || missed != 48 {
		t.Errorf("slow subscriber: %d buffered, %d missed; want 2 and 48", got, missed)
	}
	if slow.Missed() != 0 {
		t.Error("Missed does not reset")
	}
	slow.Close()
	_ = hc.Run(context.Background(), "w", exchange.NewWithBody(exchange.InOut, "x"))
	if len(slow.C()) != 2 {
		t.Error("a closed subscription still receives")
	}
	c.Close()
	select {
	case <-fast.Done():
	default:
		t.Error("Close does not end subscriptions")
	}
}

// Pages read while exchanges are published, and subscribers come and go,
// under the race detector.
func TestCaptureConcurrentReadersAndWriters(t *testing.T) {
	t.Parallel()
	c := capture.New(capture.Options{MaxBytes: 64 << 10, PerSecond: -1})
	hc := engineWith(t, c, &engine.Workflow{ID: "w", Processors: []engine.Processor{setName("x")}})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				list, _ := c.List(capture.Filter{Workflow: "w"}, 20)
				for _, e := range list {
					_ = c.Get(e.ID)
					_ = len(e.Steps) + len(e.Input.Body)
				}
				s := c.Subscribe(1)
				s.Close()
			}
		}()
	}
	var runners sync.WaitGroup
	for range 4 {
		runners.Add(1)
		go func() {
			defer runners.Done()
			for range 300 {
				_ = hc.Run(context.Background(), "w", exchange.NewWithBody(exchange.InOut, map[string]any{"a": 1}))
			}
		}()
	}
	runners.Wait()
	close(stop)
	wg.Wait()
	if st := c.Stats(); st.Bytes > 64<<10 || st.Kept == 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Bodies a capture cannot show whole — nested deeper than it walks, holding a
// value with no JSON form, or a struct with secret fields — are captured
// without a panic, marked, and still keep no secret.
func TestCaptureOddBodies(t *testing.T) {
	t.Parallel()
	c := capture.New(capture.Options{PerSecond: -1})
	hc := engineWith(t, c, &engine.Workflow{ID: "w", Processors: []engine.Processor{setName("x")}})
	deep := map[string]any{"leaf": 1}
	for range 10000 {
		deep = map[string]any{"d": deep}
	}
	self := map[string]any{}
	self["self"] = self
	type login struct {
		User     string `json:"user"`
		Password string `json:"password"`
	}
	for _, body := range []any{deep, self, map[string]any{"ch": make(chan int)}, login{"ada", "struct-pw"}, []any{1.5, true, nil, int64(7)}} {
		if err := hc.Run(context.Background(), "w", exchange.NewWithBody(exchange.InOut, body)); err != nil {
			t.Fatal(err)
		}
	}
	list, _ := c.List(capture.Filter{}, 10)
	if len(list) != 5 {
		t.Fatalf("kept %d", len(list))
	}
	plain, strct, ch, cyc, dp := list[0].Input, list[1].Input, list[2].Input, list[3].Input, list[4].Input
	if plain.Body != `[1.5,true,null,7]` || plain.BodyType != "list" {
		t.Errorf("list body %q (%s)", plain.Body, plain.BodyType)
	}
	if strings.Contains(strct.Body, "struct-pw") || !strings.Contains(strct.Body, `"user":"ada"`) || !strct.BodyRedacted {
		t.Errorf("struct body %q", strct.Body)
	}
	if !strings.Contains(ch.Body, "not JSON") {
		t.Errorf("channel body %q", ch.Body)
	}
	if !cyc.Truncated || !dp.Truncated || len(dp.Body) > capture.DefaultBodyLimit {
		t.Errorf("cyclic truncated %v, deep truncated %v (%d bytes)", cyc.Truncated, dp.Truncated, len(dp.Body))
	}
}
