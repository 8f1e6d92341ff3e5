package httpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/arvenza/helix/internal/component/httpserver"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// classified is an error that says which HTTP status describes it, as component
// errors do (a unique violation, a schema violation …).
type classified struct {
	status  int
	details any
}

func (e *classified) Error() string     { return fmt.Sprintf("classified %d", e.status) }
func (e *classified) HTTPStatus() int   { return e.status }
func (e *classified) ErrorDetails() any { return e.details }

// timeoutErr is what net and net/http return when a deadline passes.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestFailureStatusFollowsTheError(t *testing.T) {
	problems := []map[string]any{{"path": "/age", "message": "want integer"}}
	cases := []struct {
		name    string
		err     error
		header  any // HelixHttpResponseCode set by the workflow before failing
		want    int
		details bool
	}{
		{name: "plain fault", err: errors.New("unknown binary op: string + int"), want: 500},
		{name: "schema violation inside a step error", err: &engine.StepError{Step: "s", Err: &classified{422, problems}}, want: 422, details: true},
		{name: "unique violation wrapped twice", err: &engine.StepError{Step: "s", Err: fmt.Errorf("postgres: %w", &classified{status: 409})}, want: 409},
		{name: "deadline exceeded", err: &engine.StepError{Step: "s", Err: fmt.Errorf("call: %w", context.DeadlineExceeded)}, want: 504},
		{name: "a target's timeout", err: &engine.StepError{Step: "s", Err: fmt.Errorf("GET http://x: %w", timeoutErr{})}, want: 504},
		{name: "the workflow's own 4xx wins", err: &engine.StepError{Step: "s", Err: &classified{status: 409}}, header: 400, want: 400},
		{name: "a non-error status is not honoured", err: &classified{status: 200}, want: 500},
		{name: "an out-of-range status is not honoured", err: &classified{status: 1000}, want: 500},
	}
	comp := httpserver.New(nil)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := serve(t, comp, fmt.Sprintf("http-server://127.0.0.1:0/s%d", i), func(_ context.Context, ex *exchange.Exchange) error {
				if c.header != nil {
					ex.In().SetHeader(exchange.HeaderHTTPResponseCode, c.header)
				}
				return c.err
			})
			r := do(t, http.DefaultClient, "POST", fmt.Sprintf("%s/s%d", base, i), "application/json", `{}`)
			if r.status != c.want {
				t.Fatalf("status = %d, want %d (body %s)", r.status, c.want, r.body)
			}
			var body struct {
				Error  string           `json:"error"`
				Errors []map[string]any `json:"errors"`
			}
			if err := json.Unmarshal([]byte(r.body), &body); err != nil || body.Error == "" {
				t.Fatalf("body %q: want {\"error\": …}", r.body)
			}
			if c.details && (len(body.Errors) != 1 || body.Errors[0]["path"] != "/age") {
				t.Errorf("body %s: want the positioned errors under \"errors\"", r.body)
			}
			if !c.details && body.Errors != nil {
				t.Errorf("body %s: no errors list expected", r.body)
			}
		})
	}
}

func TestUnreadableInputIs400NotRun(t *testing.T) {
	comp := httpserver.New(nil)
	ran := false
	base := serve(t, comp, "http-server://127.0.0.1:0/in?consumes=application/json", func(context.Context, *exchange.Exchange) error {
		ran = true
		return nil
	})
	if r := do(t, http.DefaultClient, "POST", base+"/in", "application/json", `{"a":`); r.status != 400 {
		t.Errorf("bad JSON: status %d, want 400", r.status)
	}
	if r := do(t, http.DefaultClient, "POST", base+"/in", "text/plain", `a`); r.status != 415 {
		t.Errorf("wrong Content-Type: status %d, want 415", r.status)
	}
	if ran {
		t.Error("the workflow ran on unreadable input")
	}
}
