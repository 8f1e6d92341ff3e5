package app_test

import (
	"strings"
	"testing"
)

// Alice (role support) and bob through a gateway from YAML: the argument guard
// refuses and rewrites, the output guard masks what the upstream answers, and
// the rate counts each caller apart.
func TestGatewayGuardsAndRatesPerPrincipal(t *testing.T) {
	t.Parallel()
	url, _ := upstreamWithToken(t, "up-secret")
	a := startYAML(t, `
workflows:
  - id: greet
    trigger: direct://greet
    steps: []
mcps:
  - id: gw
    addr: "127.0.0.1:0"
    api_keys:
      - { key: alice-key-0123456789, name: alice, roles: [support] }
      - { key: bob-key-0123456789, name: bob }
    upstreams:
      - id: up
        url: `+url+`
        headers: { X-Team: support }
        auth: { type: bearer, token: up-secret }
    policies:
      - tools: ["up.*"]
        arguments: |
          if "password" in args.get("text", ""):
              reject("no passwords, " + principal["name"])
          args["text"] = args.get("text", "") + " from " + principal["name"]
        result: |
          result = redact(result, r"\b\d{3}-\d{2}-\d{4}\b")
        rate: 2/h
`)
	alice := bearerSession(t, a, "gw", "alice-key-0123456789")
	bob := bearerSession(t, a, "gw", "bob-key-0123456789")
	steps := []struct {
		who, text, want string
		isErr           bool
	}{
		{"alice", "ssn 123-45-6789", "up:ssn *** from alice", false},
		{"alice", "my password", "no passwords, alice", true},
		{"alice", "third", "rate limit of 2/h for up.echo exceeded", true},
		{"bob", "hello", "up:hello from bob", false},
	}
	for i, s := range steps {
		cs := alice
		if s.who == "bob" {
			cs = bob
		}
		text, isErr := callTool(t, cs, "up.echo", map[string]any{"text": s.text})
		if isErr != s.isErr || !strings.Contains(text, s.want) {
			t.Errorf("step %d (%s): %q (error %v), want %q (error %v)", i+1, s.who, text, isErr, s.want, s.isErr)
		}
	}
}
