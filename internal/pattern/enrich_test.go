package pattern_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/exchange"
)

func TestEnrich(t *testing.T) {
	cases := []struct {
		name     string
		vars     map[string]any
		err      error
		wantVars map[string]any
		wantErr  string
	}{
		{name: "sets variables", vars: map[string]any{"accountId": "acc-1", "n": 2}, wantVars: map[string]any{"accountId": "acc-1", "n": 2, "keep": "me"}},
		{name: "private names are not set", vars: map[string]any{"_tmp": 1, "x": true}, wantVars: map[string]any{"x": true, "keep": "me"}},
		{name: "error sets nothing", err: errors.New("bad script"), wantErr: "enrich: bad script", wantVars: map[string]any{"keep": "me"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := pattern.NewEnrich(func(context.Context, *exchange.Exchange) (map[string]any, error) { return tc.vars, tc.err })
			if err != nil {
				t.Fatal(err)
			}
			ex := exchange.NewWithBody(exchange.InOut, map[string]any{"a": 1})
			ex.SetVariable("keep", "me")
			err = e.Process(context.Background(), ex)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := ex.Variables(); len(got) != len(tc.wantVars) {
				t.Errorf("variables = %v, want %v", got, tc.wantVars)
			}
			for k, v := range tc.wantVars {
				if ex.Variable(k) != v {
					t.Errorf("variable %s = %v, want %v", k, ex.Variable(k), v)
				}
			}
			if b := ex.In().Body().(map[string]any); len(b) != 1 || b["a"] != 1 {
				t.Errorf("body changed: %v", b)
			}
		})
	}
	if _, err := pattern.NewEnrich(nil); err == nil {
		t.Error("NewEnrich(nil) should fail")
	}
}
