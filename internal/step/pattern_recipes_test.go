package step_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Spec §13 Recipe 5: one tool chains three others through direct://, carrying the
// account id in an enrich variable.
func TestPatternRecipe5FullOnboarding(t *testing.T) {
	rec := &testtools.Recorder{}
	hc, _ := patternApp(t, "onboarding.yaml", map[string]engine.Processor{"direct://record": rec})

	ex, err := call(t, hc, "full-onboarding", map[string]any{"email": "ada@example.com", "plan": "pro"})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "reply", ex.In().Body(), map[string]any{
		"status":    "onboarding_complete",
		"accountId": "acc-ada",
		"steps":     []string{"account_created", "welcome_sent", "resources_provisioned"},
	})
	if ct := ex.In().HeaderString(exchange.HeaderContentType); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if v := ex.Variable("accountId"); v != "acc-ada" {
		t.Errorf("variable accountId = %v, want acc-ada", v)
	}
	got := byStub(rec)
	jsonEqual(t, "create-account input", got["create-account"], []any{map[string]any{"email": "ada@example.com", "plan": "pro"}})
	jsonEqual(t, "send-email input", got["send-email"], []any{map[string]any{"to": "ada@example.com", "template": "welcome", "accountId": "acc-ada"}})
	// The reply of send-email has no plan, so the recipe's payload.get("plan", "free")
	// gives "free"; the account id comes from the enrich variable.
	jsonEqual(t, "provision-resources input", got["provision-resources"], []any{map[string]any{"accountId": "acc-ada", "plan": "free"}})

	// A failure in a chained tool is the caller's failure.
	if _, err := call(t, hc, "full-onboarding", map[string]any{"plan": "pro"}); err == nil || !strings.Contains(err.Error(), "email is required") {
		t.Errorf("err = %v, want the create-account failure", err)
	}
}

// slowSource answers after delay (or fails when its context ends first).
func slowSource(delay time.Duration, body any) engine.Processor {
	return engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
		select {
		case <-time.After(delay):
			ex.In().SetBody(body)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// Spec §12.4: parallel multicast to three sources, one slow, aggregated in branch order.
func TestPatternResearchTopicMulticastAggregate(t *testing.T) {
	var stuckReturned atomic.Int32
	hc, logs := patternApp(t, "research.yaml", map[string]engine.Processor{
		"direct://slow-web-search": slowSource(300*time.Millisecond, map[string]any{"source": "web"}),
		"direct://stuck": engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			<-ctx.Done()
			stuckReturned.Add(1)
			return ctx.Err()
		}),
	})
	topic := map[string]any{"topic": "starlark"}
	scholar := map[string]any{"source": "scholar", "papers": []string{"On starlark"}}
	kb := map[string]any{"source": "kb", "answer": "starlark is documented"}

	t.Run("collect size 3 in branch order", func(t *testing.T) {
		ex, err := call(t, hc, "research-topic", topic)
		if err != nil {
			t.Fatal(err)
		}
		list, ok := ex.In().Body().([]any)
		if !ok || len(list) != 3 {
			t.Fatalf("body = %#v, want a 3-element list", ex.In().Body())
		}
		// The slow source finishes last but stays second.
		jsonEqual(t, "list", list, []any{scholar, map[string]any{"source": "web"}, kb})
		if m := ex.In().Header(exchange.HeaderAggregateMissing); m != nil {
			t.Errorf("HelixAggregateMissing = %v, want none", m)
		}
	})

	t.Run("report transform from the spec", func(t *testing.T) {
		ex, err := call(t, hc, "research-report", topic)
		if err != nil {
			t.Fatal(err)
		}
		report, _ := ex.In().Body().(string)
		i1, i2, i3 := strings.Index(report, "## Source 1\n"), strings.Index(report, "## Source 2\n"), strings.Index(report, "## Source 3\n")
		if !strings.HasPrefix(report, "# Research Report\n\n") || i1 < 0 || i2 < i1 || i3 < i2 {
			t.Fatalf("report = %q", report)
		}
		if !strings.Contains(report[i1:i2], "scholar") || !strings.Contains(report[i2:i3], "web") || !strings.Contains(report[i3:], "kb") {
			t.Errorf("sources out of order in report %q", report)
		}
	})

	t.Run("completion timeout marks the missing branch and returns", func(t *testing.T) {
		start := time.Now()
		ex, err := call(t, hc, "research-partial", topic)
		if err != nil {
			t.Fatal(err)
		}
		// Generous: the stuck branch never answers; only the 300ms timeout can end this.
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %s", d)
		}
		jsonEqual(t, "list", ex.In().Body(), []any{scholar, kb})
		jsonEqual(t, "HelixAggregateMissing", ex.In().Header(exchange.HeaderAggregateMissing), []any{1})
		// Starlang sees the header as a list.
		jsonEqual(t, "Missing (read by Starlang)", ex.In().Header("Missing"), []any{1})
		if !strings.Contains(logs.String(), "multicast completed by timeout") {
			t.Error("the timeout was not logged")
		}
		// The abandoned branch is cancelled at completion.
		deadline := time.Now().Add(10 * time.Second)
		for stuckReturned.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if stuckReturned.Load() != 1 {
			t.Error("the stuck branch was not cancelled")
		}
	})

	t.Run("nested multicast", func(t *testing.T) {
		ex, err := call(t, hc, "nested-fan-out", topic)
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "list", ex.In().Body(), []any{[]any{"a", "b"}, "c"})
	})

	t.Run("sequential multicast without aggregate fails with the failed branch", func(t *testing.T) {
		_, err := call(t, hc, "fan-out-sequential", topic)
		if err == nil || !strings.Contains(err.Error(), "branch 2") || !strings.Contains(err.Error(), "source unavailable") {
			t.Fatalf("err = %v, want branch 2's failure", err)
		}
	})
}

// Spec §10.1: the failure goes to the dead letter channel log://errors and still
// reaches the caller.
func TestPatternRiskyOperationDeadLetter(t *testing.T) {
	hc, logs := patternApp(t, "errors.yaml", map[string]engine.Processor{"direct://record": &testtools.Recorder{}, "direct://dlq": &testtools.Recorder{}})

	ex, err := call(t, hc, "risky-operation", map[string]any{"value": 1})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "reply", ex.In().Body(), map[string]any{"value": 1})
	if strings.Contains(logs.String(), "logger=errors") {
		t.Fatal("a successful exchange was dead-lettered")
	}

	_, err = call(t, hc, "risky-operation", map[string]any{"value": -1})
	if err == nil || !strings.Contains(err.Error(), "Value must be non-negative") {
		t.Fatalf("err = %v, want the fail() message", err)
	}
	out := logs.String()
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "logger=errors") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("nothing logged by log://errors; logs:\n%s", out)
	}
	if !strings.Contains(line, "Value must be non-negative") || !strings.Contains(line, `body="{\"value\":-1}"`) {
		t.Errorf("dead letter log line lacks the error or the original body: %s", line)
	}
}

// Spec §13 Recipe 2, with direct://billing-db standing in for postgres.
func TestPatternRecipe2CreateInvoice(t *testing.T) {
	rec := &testtools.Recorder{}
	hc, _ := patternApp(t, "errors.yaml", map[string]engine.Processor{"direct://record": rec, "direct://dlq": &testtools.Recorder{}})
	cases := []struct {
		name    string
		in      map[string]any
		want    map[string]any
		wantErr string
	}{
		{
			name: "created",
			in: map[string]any{"customerId": "c7", "currency": "EUR",
				"items": []any{map[string]any{"price": 10, "qty": 2}, map[string]any{"price": 5}}},
			want: map[string]any{"invoiceId": "inv-c7", "total": 25, "currency": "EUR", "status": "created"},
		},
		{name: "missing field", in: map[string]any{"customerId": "c7", "currency": "EUR"}, wantErr: "Missing required field: items"},
		{name: "unsupported currency", in: map[string]any{"customerId": "c7", "currency": "JPY", "items": []any{}}, wantErr: "Unsupported currency: JPY"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rec.All())
			ex, err := call(t, hc, "create-invoice", tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if n := len(rec.All()) - before; n != 0 {
					t.Errorf("the database stub was called %d times after a validation failure", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, "reply", ex.In().Body(), tc.want)
			if n := len(rec.All()) - before; n != 1 {
				t.Errorf("the database stub was called %d times, want 1", n)
			}
		})
	}
}

// error-handler redelivery from YAML: Starlang sees HelixRedeliveryCount; once
// exhausted the dead letter carries the original body and the failing step.
func TestPatternRedeliveryAndDeadLetter(t *testing.T) {
	dlq := &testtools.Recorder{}
	hc, _ := patternApp(t, "errors.yaml", map[string]engine.Processor{"direct://record": &testtools.Recorder{}, "direct://dlq": dlq})

	ex, err := call(t, hc, "flaky", map[string]any{"succeedAt": 2})
	if err != nil {
		t.Fatalf("should succeed on the 2nd redelivery: %v", err)
	}
	jsonEqual(t, "reply", ex.In().Body(), map[string]any{"attempting": map[string]any{"succeedAt": 2}, "attempts": 3})
	if got := ex.In().Header(exchange.HeaderRedeliveryCount); got != 2 {
		t.Errorf("HelixRedeliveryCount = %v, want 2", got)
	}
	if n := len(dlq.All()); n != 0 {
		t.Fatalf("%d dead letters for a recovered exchange", n)
	}

	_, err = call(t, hc, "flaky", map[string]any{"succeedAt": 5})
	if err == nil || !strings.Contains(err.Error(), "attempt 2 failed") {
		t.Fatalf("err = %v, want the last attempt's failure", err)
	}
	got := dlq.All()
	if len(got) != 1 {
		t.Fatalf("dead letters = %d, want 1", len(got))
	}
	dl := got[0].In()
	jsonEqual(t, "dead letter body (the original)", dl.Body(), map[string]any{"succeedAt": 5})
	step := dl.HeaderString(exchange.HeaderFailedStep)
	if want := "testdata/patterns/errors.yaml:74:9 process"; step != want {
		t.Errorf("HelixFailedStep = %q, want %q (the position of the failing step)", step, want)
	}
	if msg := dl.HeaderString(exchange.HeaderExceptionMessage); !strings.Contains(msg, "attempt 2 failed") || !strings.HasPrefix(msg, step) {
		t.Errorf("HelixExceptionMessage = %q", msg)
	}
	if w := dl.HeaderString(exchange.HeaderFailedWorkflow); w != "flaky" {
		t.Errorf("HelixFailedWorkflow = %q", w)
	}
	if c := dl.Header(exchange.HeaderRedeliveryCount); c != 2 {
		t.Errorf("HelixRedeliveryCount = %v, want 2", c)
	}
}

// Spec §10.2 and §12.3: choice routes on headers and on the payload.
func TestPatternChoice(t *testing.T) {
	hc, logs := patternApp(t, "routing.yaml", map[string]engine.Processor{"direct://audit": &testtools.Recorder{}})
	cases := []struct {
		name, workflow string
		body           any
		header         string
		wantOutcome    string
		wantBody       any
	}{
		{name: "tool error branch", workflow: "call-external", body: "q", header: "true", wantOutcome: "failed", wantBody: map[string]any{"echo": "q"}},
		{name: "otherwise", workflow: "call-external", body: "q", header: "false", wantOutcome: "succeeded", wantBody: map[string]any{"echo": "q"}},
		{name: "no header: otherwise", workflow: "call-external", body: "q", wantOutcome: "succeeded", wantBody: map[string]any{"echo": "q"}},
		{name: "first when", workflow: "categorize", body: "billing question", wantBody: "billing-tickets"},
		{name: "second when", workflow: "categorize", body: "technical issue", wantBody: "tech-tickets"},
		{name: "first match wins", workflow: "categorize", body: "technical billing", wantBody: "billing-tickets"},
		{name: "categorize otherwise", workflow: "categorize", body: "hello", wantBody: "general-tickets"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := exchange.NewWithBody(exchange.InOut, tc.body)
			if tc.header != "" {
				ex.In().SetHeader(exchange.HeaderMcpIsError, tc.header)
			}
			if err := hc.Run(context.Background(), tc.workflow, ex); err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, "body", ex.In().Body(), tc.wantBody)
			if got := ex.In().HeaderString("Outcome"); got != tc.wantOutcome {
				t.Errorf("Outcome = %q, want %q", got, tc.wantOutcome)
			}
		})
	}
	if !strings.Contains(logs.String(), "MCP tool failed: ") {
		t.Error("the when branch's log step did not run")
	}
}

// A wiretap whose target blocks for 10 s never delays the main exchange, and Stop
// cancels it (patternApp's cleanup stops the app and checks for leaked goroutines).
func TestPatternWiretapSlowTarget(t *testing.T) {
	started := make(chan *exchange.Exchange, 1)
	var cancelled atomic.Bool
	hc, _ := patternApp(t, "routing.yaml", map[string]engine.Processor{
		"direct://audit": engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			started <- ex.Copy()
			select {
			case <-time.After(10 * time.Second):
				return errors.New("tap was not cancelled")
			case <-ctx.Done():
				cancelled.Store(true)
				return ctx.Err()
			}
		}),
	})
	start := time.Now()
	ex, err := call(t, hc, "deploy-service", map[string]any{"service": "api"})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("main exchange took %s: the wiretap delayed it", d)
	}
	jsonEqual(t, "reply", ex.In().Body(), map[string]any{"status": "deployed", "service": "api"})
	tapped := <-started
	jsonEqual(t, "tapped body", tapped.In().Body(), map[string]any{"service": "api"})
	if tapped.Variable("service") != "api" {
		t.Errorf("the tap should carry the enrich variables, got %v", tapped.Variables())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_ = hc.Stop(ctx) // drains for 300ms, then cancels the tap
	if !cancelled.Load() {
		t.Error("Stop did not cancel the blocked tap")
	}
}
