package pattern_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func bodyIs(v string) pattern.Predicate {
	return func(_ context.Context, ex *exchange.Exchange) (bool, error) {
		return ex.In().Body() == v, nil
	}
}

func TestChoice(t *testing.T) {
	whens := []pattern.When{
		{Predicate: bodyIs("a"), Steps: setBody("first")},
		{Predicate: func(_ context.Context, ex *exchange.Exchange) (bool, error) {
			return strings.HasPrefix(ex.In().Body().(string), "a") || ex.In().Body() == "b", nil
		}, Steps: setBody("second")},
		{Predicate: bodyIs("boom"), Name: "helix.yaml:9:11 when", Steps: setBody("never")},
		{Predicate: bodyIs("fail"), Steps: fn(func(_ context.Context, ex *exchange.Exchange) error {
			ex.SetException(errors.New("branch failed"))
			return nil
		})},
		{Predicate: bodyIs("noop")}, // a branch without steps leaves the exchange alone
	}
	whens[2].Predicate = func(_ context.Context, ex *exchange.Exchange) (bool, error) {
		if ex.In().Body() == "boom" {
			return false, errors.New("predicate exploded")
		}
		return false, nil
	}
	cases := []struct {
		name      string
		otherwise engine.Processor
		body      string
		want      any
		wantErr   string
	}{
		{name: "first match wins over a later match", body: "a", want: "first"},
		{name: "second branch", body: "b", want: "second"},
		{name: "otherwise", otherwise: setBody("other"), body: "z", want: "other"},
		{name: "no match and no otherwise keeps the body", body: "z", want: "z"},
		{name: "predicate error names the branch", body: "boom", wantErr: "helix.yaml:9:11 when: predicate exploded"},
		{name: "exception in a branch fails the choice", body: "fail", wantErr: "branch failed"},
		{name: "empty branch", body: "noop", want: "noop"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := pattern.NewChoice(whens, tc.otherwise)
			if err != nil {
				t.Fatal(err)
			}
			ex := exchange.NewWithBody(exchange.InOut, tc.body)
			err = c.Process(context.Background(), ex)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ex.In().Body(); got != tc.want {
				t.Errorf("body = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChoiceChildrenAndValidation(t *testing.T) {
	other := setBody("x")
	c, err := pattern.NewChoice([]pattern.When{{Predicate: bodyIs("a"), Steps: setBody("y")}, {Predicate: bodyIs("b")}}, other)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Children()); n != 2 {
		t.Errorf("children = %d, want 2 (one branch with steps + otherwise)", n)
	}
	if _, err := pattern.NewChoice([]pattern.When{{Steps: other}}, nil); err == nil || !strings.Contains(err.Error(), "when[0] has no predicate") {
		t.Errorf("missing predicate: err = %v", err)
	}
	if _, err := pattern.NewChoice(nil, nil); err == nil {
		t.Error("an empty choice should be rejected")
	}
}
