package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// policies: as written in YAML, decoded by the config package, compiled here:
// a script's error is reported at its line and column in the file.
func TestPoliciesFromYAML(t *testing.T) {
	t.Parallel()
	src := `mcps:
  - id: gw
    addr: "127.0.0.1:0"
    upstreams:
      - { id: gh, url: "http://127.0.0.1:1/mcp" }
    policies:
      - tools: ["gh.*"]
        allow: { roles: [support] }
        arguments: |
          if "password" in args:
              reject("no passwords")
        rate: 2/s
`
	cfg, err := config.LoadBytes("gw.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New("gw", cfg.MCPs[0].Gateway.Policies, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r := refusal(t, g.Before(context.Background(), call(alice, "gh.create", `{"password":"x"}`)))
	if r.Reason != gateway.OutcomeGuard || r.Message != "no passwords" {
		t.Errorf("refusal %+v", r)
	}
	if g.Visible(context.Background(), bob, gateway.KindTool, "gh.create") {
		t.Error("bob sees gh.create")
	}

	bad := strings.Replace(src, `reject("no passwords")`, `reject("no passwords"`, 1)
	cfg, err = config.LoadBytes("gw.yaml", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New("gw", cfg.MCPs[0].Gateway.Policies, Options{})
	if err == nil || !strings.Contains(err.Error(), "gw.yaml:11:") {
		t.Errorf("a syntax error in the script: %v, want it at gw.yaml:11", err)
	}
}

// The decoder checks rate: and quota: with ParseRate and ParseQuota.
func TestYAMLChecksRatesWithTheGuardsParser(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, want string }{
		{"rate: 10/minute", ""},
		{"rate: 0/s", "gw.yaml:5:29: mcps[0].policies[0].rate: rate \"0/s\": the number of calls must be a whole number > 0"},
		{"quota: 5/s", "a quota's window is a minute, an hour or a day"},
		{"quota: 100/d", ""},
	} {
		src := "mcps:\n  - id: gw\n    addr: \"127.0.0.1:0\"\n    policies:\n      - { tools: [a], " + tc.line + " }\n"
		_, err := config.LoadBytes("gw.yaml", []byte(src))
		var errs config.Errors
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.line, err)
		case tc.want != "" && (!errors.As(err, &errs) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.line, err, tc.want)
		}
	}
}
