package config

import (
	"strings"
	"testing"
	"time"
)

func TestGatewayDecodesEveryKey(t *testing.T) {
	t.Parallel()
	const src = `
mcps:
  - id: gw
    addr: "127.0.0.1:0"
    upstreams:
      - id: github
        url: https://mcp.example.com/mcp
        replicas: [https://mcp-b.example.com/mcp]
        prefix: "gh."
        sessions: per-principal
        include: ["*"]
        exclude: [delete_*]
        headers: { X-Team: support }
        auth: { type: bearer, token: secret-token }
        credentials: exchange
        audience: https://mcp.example.com
        token_exchange: { token_url: "https://idp.example.com/token", client_id: gw, client_secret: s, audience: a, resource: r, scopes: [x] }
        timeout: 30s
        health: { interval: 15s, timeout: 5s }
      - id: files
        command: npx
        args: [-y, server]
        env: { LOG_LEVEL: warn }
    audiences:
      - { path: /mcp/support, tools: ["gh.*", triage] }
    policies:
      - tools: ["gh.*"]
        allow: { principals: [alice], roles: [support], scopes: [tickets:write] }
        deny:  { principals: [mallory] }
        arguments: 'reject("x")'
        result: 'result = result'
        rate: 10/s
        quota: 1000/day
        max_result_bytes: 1MiB
        timeout: 10s
    audit:
      sink: log
      arguments: redacted
      max_file_bytes: 100MiB
      keep_files: 3
`
	c, err := LoadBytes("gw.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	g := c.MCPs[0].Gateway
	if g == nil || len(g.Upstreams) != 2 || len(g.Audiences) != 1 || len(g.Policies) != 1 || g.Audit == nil {
		t.Fatalf("gateway = %+v", g)
	}
	u := g.Upstreams[0]
	if u.ID != "github" || u.URL != "https://mcp.example.com/mcp" || len(u.Replicas) != 1 || *u.Prefix != "gh." ||
		u.Sessions != SessionsPerPrincipal || u.Exclude[0] != "delete_*" || u.Headers["X-Team"] != "support" ||
		u.Auth.Values["token"] != "secret-token" || u.Credentials != CredentialsExchange || u.TokenExchange.ClientID != "gw" ||
		u.Timeout != 30*time.Second || u.Health.Interval != 15*time.Second || u.Transport != UpstreamHTTP || u.Path != "mcps[0].upstreams[0]" {
		t.Errorf("upstream = %+v", u)
	}
	if f := g.Upstreams[1]; f.Transport != UpstreamStdio || f.Command != "npx" || f.Env["LOG_LEVEL"] != "warn" || f.Prefix != nil {
		t.Errorf("stdio upstream = %+v", f)
	}
	if p := g.Policies[0]; p.Rate != "10/s" || p.Quota != "1000/day" || p.MaxResultBytes != 1<<20 || p.Allow.Roles[0] != "support" ||
		p.Deny.Principals[0] != "mallory" || p.ArgumentsPos.Line == 0 || p.Timeout != 10*time.Second {
		t.Errorf("policy = %+v", p)
	}
	if a := g.Audit; a.Sink != "log" || a.Arguments != "redacted" || a.KeepFiles != 3 || a.MaxFileBytes != 100<<20 {
		t.Errorf("audit = %+v", a)
	}
	// Both lists share the decoder.
	c, err = LoadBytes("gw.yaml", []byte("helix:\n  mcp:\n    servers:\n      - enabled: true\n        upstreams: [{id: a, url: 'http://127.0.0.1:1/mcp'}]\n"))
	if err != nil || c.Helix.MCP.Servers[0].Gateway == nil || c.Helix.MCP.Servers[0].Gateway.Upstreams[0].ID != "a" {
		t.Fatalf("helix.mcp.servers gateway: %v", err)
	}
	// A server without gateway keys has none.
	c, _ = LoadBytes("gw.yaml", []byte("mcps: [{id: plain}]\n"))
	if c.MCPs[0].Gateway != nil {
		t.Errorf("plain server has a gateway: %+v", c.MCPs[0].Gateway)
	}
}

func TestGatewayYAMLErrorsAtPositions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown key", "upstreams: [{id: a, url: 'http://h/mcp', prefx: x}]", `gw.yaml:3:46: mcps[0].upstreams[0]: unknown key "prefx" in an upstream`},
		{"duplicate id", "upstreams: [{id: a, url: 'http://h/mcp'}, {id: a, url: 'http://h/mcp'}]", `gw.yaml:3:47: mcps[0].upstreams[1]: upstream id "a" is used twice`},
		{"bad scheme", "upstreams: [{id: a, url: 'ftp://h/mcp'}]", `gw.yaml:3:30: mcps[0].upstreams[0].url: upstream url must be an http or https URL`},
		{"stdio without command", "upstreams: [{id: a, transport: stdio}]", `gw.yaml:3:36: mcps[0].upstreams[0]: upstream a: a stdio upstream needs command:`},
		{"stdio with url", "upstreams: [{id: a, command: x, url: 'http://h/'}]", `upstream a: a stdio upstream takes no url:`},
		{"no url", "upstreams: [{id: a}]", `upstream a needs url:`},
		{"bad sessions", "upstreams: [{id: a, url: 'http://h/', sessions: per-user}]", `unknown sessions "per-user"`},
		{"bad credentials", "upstreams: [{id: a, url: 'http://h/', credentials: mine}]", `unknown credentials "mine"`},
		{"exchange without config", "upstreams: [{id: a, url: 'http://h/', credentials: exchange}]", `credentials: exchange needs token_exchange:`},
		{"shared passthrough", "upstreams: [{id: a, url: 'http://h/', credentials: passthrough, audience: x, sessions: shared}]", `its sessions cannot be shared`},
		{"bad prefix", "upstreams: [{id: a, url: 'http://h/', prefix: 'a b'}]", `prefix "a b" has a space or a slash`},
		{"bad id", "upstreams: [{id: 'a b', url: 'http://h/'}]", `upstream id "a b": want letters`},
		{"audience path", "audiences: [{path: support, tools: ['*']}]", `gw.yaml:3:24: mcps[0].audiences[0].path: audience path "support" must start with /`},
		{"audience own path", "audiences: [{path: /mcp, tools: ['*']}]", `is one of the server's own paths`},
		{"audience bad glob", "audiences: [{path: /a, tools: ['[']}]", `"[" is not a valid glob`},
		{"rate", "policies: [{tools: ['*'], rate: 10/week}]", `gw.yaml:3:37: mcps[0].policies[0].rate: rate "10/week" is not <n>/<s|m|h>`},
		{"quota", "policies: [{tools: ['*'], quota: lots}]", `quota "lots" is not <n>/<minute|hour|day>`},
		{"policy without tools", "policies: [{rate: 1/s}]", `a policy is missing required key "tools"`},
		{"audit arguments", "audit: {sink: log, arguments: all}", `unknown audit arguments "all"`},
		{"audit needs sink", "audit: {arguments: full}", `audit is missing required key "sink"`},
		{"upstream not a mapping", "upstreams: [github]", `an upstream must be a mapping`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBytes("gw.yaml", []byte("mcps:\n  - id: gw\n    "+tc.yaml+"\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestGatewayErrorsNeverQuoteSecrets(t *testing.T) {
	t.Parallel()
	_, err := LoadBytes("gw.yaml", []byte("mcps:\n  - id: gw\n    upstreams: [{id: a, url: 'ftp://user:hunter2@h/mcp'}]\n"))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error = %v", err)
	}
}
