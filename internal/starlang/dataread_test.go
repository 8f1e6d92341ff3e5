package starlang

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/exchange"
)

func fmtValue(v any) string { return fmt.Sprint(v) }

// TestExchangeDataBuiltOnlyWhenRead: headers, variables and response_code are
// given to a script that names them anywhere (top level, inside a def, assigned at
// top level), with their values; a script that names none of them is not given them,
// so a header no script could read does not stop it. A variable read as a free name
// still needs the variables.
func TestExchangeDataBuiltOnlyWhenRead(t *testing.T) {
	unconvertible := input{body: map[string]any{"text": "hi"}, headers: map[string]any{"bad": make(chan int), "X-Code": 201},
		vars: map[string]any{"v": "var"}}
	for _, tc := range []struct {
		src, want, wantErr string
	}{
		{src: `{"text": payload["text"]}`, want: `map[text:hi]`},
		{src: `body["text"] + v`, want: `hivar`},
		{src: `variables["v"]`, want: `var`},
		{src: `headers["bad"]`, wantErr: "cannot give the headers to the script"},
		{src: "def f():\n    return headers\nf()", wantErr: "cannot give the headers to the script"},
		{src: "headers = 1\nheaders", wantErr: "cannot give the headers to the script"},
	} {
		s := compile(t, tc.src, nil)
		res, err := s.Eval(context.Background(), unconvertible.exchange())
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want %q", tc.src, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.src, err)
		case strings.TrimSpace(fmtValue(res.Value)) != tc.want:
			t.Errorf("%q = %v, want %s", tc.src, res.Value, tc.want)
		}
	}
	ok := input{body: "x", headers: map[string]any{"X-Code": 201, exchange.HeaderHTTPResponseCode: 404}}
	for src, want := range map[string]string{
		`headers["X-Code"]`:                             "201",
		"def f():\n    return headers[\"X-Code\"]\nf()": "201",
		`response_code`:                                 "404",
		`type(variables)`:                               "dict",
	} {
		res, err := compile(t, src, nil).Eval(context.Background(), ok.exchange())
		if err != nil || fmtValue(res.Value) != want {
			t.Errorf("%q = %v, %v; want %s", src, res, err, want)
		}
	}
}
