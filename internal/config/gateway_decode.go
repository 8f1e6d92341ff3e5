package config

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Values checked by the gateway's policy package when it is built in (see
// RegisterValueCheck); without a registered check the decoder checks the
// syntax itself (checkGatewayRate, checkGatewayQuota).
const (
	// CheckGatewayRate is a gateway policy's rate: ("<n>/<s|m|h>").
	CheckGatewayRate = "mcps.policies.rate"
	// CheckGatewayQuota is a gateway policy's quota: ("<n>/<minute|hour|day>").
	CheckGatewayQuota = "mcps.policies.quota"
)

// gatewayFields adds the gateway keys (upstreams:, audiences:, policies:,
// audit:) of an MCP server entry to f. The decoded model goes to *gw, made on
// the first gateway key.
func gatewayFields(d *Decoder, gw **GatewayConfig, f Fields) Fields {
	get := func() *GatewayConfig {
		if *gw == nil {
			*gw = &GatewayConfig{}
		}
		return *gw
	}
	f["upstreams"] = func(v *yaml.Node, p string) {
		g := get()
		g.Upstreams = append(g.Upstreams, decodeUniqueList(d, v, p, "upstreams", decodeUpstream,
			func(u UpstreamConfig) (string, int) { return u.ID, u.Pos.Line }, "upstream id %q is used twice (first at line %d)",
			"give each upstream its own id: it names the upstream in prefixes, logs and audit records")...)
	}
	f["audiences"] = func(v *yaml.Node, p string) {
		g := get()
		g.Audiences = append(g.Audiences, decodeUniqueList(d, v, p, "audiences", decodeAudience,
			func(a AudienceConfig) (string, int) { return a.Path, a.Pos.Line }, "audience path %q is used twice (first at line %d)",
			"each audience is a virtual server of its own: give it its own path")...)
	}
	f["policies"] = func(v *yaml.Node, p string) {
		g := get()
		g.Policies = append(g.Policies, decodeList(d, v, p, "policies", decodePolicy)...)
	}
	f["audit"] = func(v *yaml.Node, p string) { get().Audit = decodeAudit(d, v, p) }
	return f
}

// decodeUniqueList is decodeList for items that must differ in a key (an
// upstream's id, an audience's path): an item whose key an earlier one has is
// an error (dup, with the key and the first one's line, and hint) and left out.
func decodeUniqueList[T any](d *Decoder, v *yaml.Node, p, name string, decode func(*Decoder, *yaml.Node, string) (T, bool),
	key func(T) (string, int), dup, hint string) []T {
	items, _ := d.Sequence(v, p, name)
	seen := map[string]int{}
	var out []T
	for i, it := range items {
		x, ok := decode(d, it, IndexPath(p, i))
		if !ok {
			continue
		}
		k, line := key(x)
		if first, twice := seen[k]; twice {
			d.Errorf(it, IndexPath(p, i), dup, k, first).Hint = hint
			continue
		}
		seen[k] = line
		out = append(out, x)
	}
	return out
}

// upstreamIDPattern is what an upstream id may be: it becomes part of served
// names (the default prefix "<id>.") and of log lines.
var upstreamIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// Transports of an upstream (UpstreamConfig.Transport).
const (
	UpstreamHTTP  = "http"
	UpstreamSSE   = "sse"
	UpstreamStdio = "stdio"
)

func decodeUpstream(d *Decoder, n *yaml.Node, p string) (UpstreamConfig, bool) {
	u := UpstreamConfig{Pos: d.Pos(n), Path: p}
	var urlNode, commandNode, transportNode *yaml.Node
	fields := Fields{
		"id": func(v *yaml.Node, p string) {
			u.ID = d.String(v, p)
			if d.desc == nil && !upstreamIDPattern.MatchString(u.ID) {
				d.Errorf(v, p, "upstream id %q: want letters, digits, - and _ (at most 64, starting with a letter or digit)", u.ID).Hint =
					"the id names the upstream in logs and audit records and is its default prefix (github → github.create_issue)"
			}
		},
		"url": func(v *yaml.Node, p string) {
			urlNode, u.URL = v, d.String(v, p)
			checkUpstreamURL(d, v, p, u.URL)
		},
		"replicas": func(v *yaml.Node, p string) {
			u.Replicas = d.Strings(v, p)
			if rv := d.Resolve(v); rv != nil && rv.Kind == yaml.SequenceNode {
				for i, r := range u.Replicas {
					checkUpstreamURL(d, rv.Content[i], IndexPath(p, i), r)
				}
			}
		},
		"transport": func(v *yaml.Node, p string) {
			d.Doc(v, "", UpstreamHTTP, UpstreamSSE, UpstreamStdio)
			transportNode, u.Transport = v, strings.ToLower(d.String(v, p))
			if d.desc == nil && !oneOf(u.Transport, UpstreamHTTP, UpstreamSSE, UpstreamStdio) {
				d.Errorf(v, p, "unknown upstream transport %q", u.Transport).Hint =
					hintOr(DidYouMean(u.Transport, []string{UpstreamHTTP, UpstreamSSE, UpstreamStdio}),
						"http (Streamable HTTP, the default with url:), sse (the 2024-11-05 HTTP+SSE transport) or stdio (with command:)")
			}
		},
		"command": func(v *yaml.Node, p string) { commandNode, u.Command = v, d.String(v, p) },
		"args":    func(v *yaml.Node, p string) { u.Args = d.Strings(v, p) },
		"env":     func(v *yaml.Node, p string) { u.Env = decodeStringMap(d, v, p, "env") },
		"prefix": func(v *yaml.Node, p string) {
			s := d.String(v, p)
			if d.desc == nil && strings.ContainsAny(s, " \t\r\n/") {
				d.Errorf(v, p, "prefix %q has a space or a slash", s).Hint =
					`a prefix goes before every tool and prompt name: write something like "github." or "gh_"; "" keeps the upstream's names`
			}
			u.Prefix = &s
		},
		"sessions": func(v *yaml.Node, p string) {
			d.Doc(v, "", SessionsPerClient, SessionsShared, SessionsPerPrincipal)
			u.Sessions = d.String(v, p)
			if d.desc == nil && !oneOf(u.Sessions, SessionsPerClient, SessionsShared, SessionsPerPrincipal) {
				d.Errorf(v, p, "unknown sessions %q", u.Sessions).Hint = hintOr(DidYouMean(u.Sessions, []string{SessionsPerClient, SessionsShared, SessionsPerPrincipal}),
					"per-client: one upstream session per client session; shared: one for all; per-principal: one per caller")
			}
		},
		"include": func(v *yaml.Node, p string) { u.Include = decodeGlobs(d, v, p) },
		"exclude": func(v *yaml.Node, p string) { u.Exclude = decodeGlobs(d, v, p) },
		"headers": func(v *yaml.Node, p string) { u.Headers = decodeStringMap(d, v, p, "headers") },
		"auth": func(v *yaml.Node, p string) {
			// The auth: block of an mcp:// target: its shape, and pkg/app checks it.
			if sh := mcpAuthShape; d.describeAs(v, yaml.MappingNode, &sh) || d.desc != nil {
				return
			}
			m, ok := d.Value(v, p).(map[string]any)
			if !ok {
				d.Errorf(v, p, "auth must be a mapping, such as {type: bearer, token: \"${env:UPSTREAM_TOKEN}\"}")
				return
			}
			u.Auth = &UpstreamAuth{Values: m, Pos: d.Pos(v)}
		},
		"credentials": func(v *yaml.Node, p string) {
			d.Doc(v, "", CredentialsGateway, CredentialsPassthrough, CredentialsExchange)
			u.Credentials = d.String(v, p)
			if d.desc == nil && !oneOf(u.Credentials, CredentialsGateway, CredentialsPassthrough, CredentialsExchange) {
				d.Errorf(v, p, "unknown credentials %q", u.Credentials).Hint = hintOr(DidYouMean(u.Credentials, []string{CredentialsGateway, CredentialsPassthrough, CredentialsExchange}),
					"gateway: the gateway's own auth:; passthrough: the caller's token (same audience only); exchange: the caller's token exchanged (token_exchange:)")
			}
		},
		"audience":       func(v *yaml.Node, p string) { u.Audience = d.String(v, p) },
		"token_exchange": func(v *yaml.Node, p string) { u.TokenExchange = decodeTokenExchange(d, v, p) },
		"timeout": func(v *yaml.Node, p string) {
			u.Timeout = d.Duration(v, p)
			if u.Timeout < 0 {
				d.Errorf(v, p, "timeout must not be negative")
			}
		},
		"health": func(v *yaml.Node, p string) {
			d.Mapping(v, p, "an upstream's health", Fields{
				"interval": func(v *yaml.Node, p string) { u.Health.Interval = d.Duration(v, p) },
				"timeout": func(v *yaml.Node, p string) {
					u.Health.Timeout = d.Duration(v, p)
					if u.Health.Timeout < 0 {
						d.Errorf(v, p, "health timeout must not be negative")
					}
				},
			})
		},
	}
	if !d.Mapping(n, p, "an upstream", fields, "id") || d.desc != nil {
		return u, false
	}
	if u.ID == "" {
		return u, false
	}
	// The transport and what it needs.
	if u.Transport == "" {
		u.Transport = UpstreamHTTP
		if u.Command != "" {
			u.Transport = UpstreamStdio
		}
	}
	switch u.Transport {
	case UpstreamStdio:
		if u.Command == "" {
			d.Errorf(orNode(transportNode, n), p, "upstream %s: a stdio upstream needs command:", u.ID).Hint =
				"write the program to start, e.g. command: npx with args: [-y, \"@modelcontextprotocol/server-everything\"]"
		}
		if u.URL != "" || len(u.Replicas) > 0 {
			d.Errorf(orNode(urlNode, n), p, "upstream %s: a stdio upstream takes no url: or replicas:", u.ID).Hint =
				"remove url: to start command:, or remove command: to reach the server at url:"
		}
	default:
		if u.URL == "" {
			d.Errorf(n, p, "upstream %s needs url: (or command: for a stdio server)", u.ID).Hint =
				"url is the server's MCP endpoint, such as https://mcp.example.com/mcp"
		}
		if u.Command != "" {
			d.Errorf(orNode(commandNode, n), p, "upstream %s: command: starts a stdio server, but the transport is %s", u.ID, u.Transport).Hint =
				"remove command: (and args:, env:), or remove url: and transport: to start the program"
		}
	}
	// Credentials that act for the caller need sessions of the caller's own.
	if oneOf(u.Credentials, CredentialsPassthrough, CredentialsExchange) {
		if u.Sessions != "" && u.Sessions != SessionsPerPrincipal && u.Sessions != SessionsPerClient {
			d.Errorf(n, p, "upstream %s: credentials: %s acts for each caller, so its sessions cannot be shared", u.ID, u.Credentials).Hint =
				"write sessions: per-principal (or per-client)"
		}
		if u.Credentials == CredentialsExchange && u.TokenExchange == nil {
			d.Errorf(n, p, "upstream %s: credentials: exchange needs token_exchange:", u.ID).Hint =
				"token_exchange: {token_url: …, client_id: …, client_secret: \"${env:…}\"}"
		}
		if u.Credentials == CredentialsPassthrough && u.Audience == "" {
			d.Errorf(n, p, "upstream %s: credentials: passthrough needs audience:", u.ID).Hint =
				"audience is what a caller's token must name to be passed to this upstream (usually its URL)"
		}
	}
	return u, true
}

func orNode(a, b *yaml.Node) *yaml.Node {
	if a != nil {
		return a
	}
	return b
}

// checkUpstreamURL checks that s is an http or https URL with a host. The
// message never quotes the URL: it may carry credentials.
func checkUpstreamURL(d *Decoder, n *yaml.Node, p, s string) {
	if d.desc != nil || s == "" {
		return
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.Errorf(n, p, "upstream url must be an http or https URL with a host").Hint =
			"the upstream's MCP endpoint, such as https://mcp.example.com/mcp; for a program on this machine use command:"
	}
}

// decodeStringMap decodes a mapping of strings (env:, headers:).
func decodeStringMap(d *Decoder, v *yaml.Node, p, what string) map[string]string {
	pairs, _ := d.Pairs(v, p, what)
	if len(pairs) == 0 {
		return nil
	}
	out := make(map[string]string, len(pairs))
	for _, pr := range pairs {
		out[pr.Key] = d.String(pr.Value, KeyPath(p, pr.Key))
	}
	return out
}

// decodeGlobs decodes a list of globs (path.Match syntax), each checked.
func decodeGlobs(d *Decoder, v *yaml.Node, p string) []string {
	globs := d.Strings(v, p)
	if d.desc != nil {
		return nil
	}
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			d.Errorf(v, p, "%q is not a valid glob: %v", g, err).Hint = `globs use * and ?, such as "github.*" or "delete_*"`
		}
	}
	return globs
}

func decodeTokenExchange(d *Decoder, v *yaml.Node, p string) *TokenExchangeConfig {
	te := &TokenExchangeConfig{Pos: d.Pos(v)}
	d.Mapping(v, p, "token_exchange", Fields{
		"token_url": func(v *yaml.Node, p string) {
			te.TokenURL = d.String(v, p)
			if d.desc == nil {
				if u, err := url.Parse(te.TokenURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					d.Errorf(v, p, "token_url must be an http or https URL").Hint = "the authorization server's token endpoint"
				}
			}
		},
		"client_id":     func(v *yaml.Node, p string) { te.ClientID = d.String(v, p) },
		"client_secret": func(v *yaml.Node, p string) { te.ClientSecret = d.String(v, p) },
		"audience":      func(v *yaml.Node, p string) { te.Audience = d.String(v, p) },
		"resource":      func(v *yaml.Node, p string) { te.Resource = d.String(v, p) },
		"scopes":        func(v *yaml.Node, p string) { te.Scopes = d.Strings(v, p) },
	}, "token_url")
	return te
}

func decodeAudience(d *Decoder, n *yaml.Node, p string) (AudienceConfig, bool) {
	a := AudienceConfig{Pos: d.Pos(n)}
	ok := d.Mapping(n, p, "an audience", Fields{
		"path": func(v *yaml.Node, p string) {
			a.Path = d.String(v, p)
			if d.desc != nil {
				return
			}
			switch {
			case !strings.HasPrefix(a.Path, "/") || strings.ContainsAny(a.Path, " ?#*"):
				d.Errorf(v, p, "audience path %q must start with / and hold no spaces, ?, # or *", a.Path).Hint =
					"a path on the server's listener, such as /mcp/support"
			case slices.Contains(ownServerPaths, strings.TrimSuffix(a.Path, "/")) || a.Path == "/":
				d.Errorf(v, p, "audience path %q is one of the server's own paths (%s)", a.Path, strings.Join(ownServerPaths, ", ")).Hint =
					"choose a path of its own, such as /mcp/support"
			}
		},
		"tools": func(v *yaml.Node, p string) { a.Tools = decodeGlobs(d, v, p) },
	}, "path", "tools")
	return a, ok && d.desc == nil && a.Path != ""
}

// ownServerPaths are the paths an MCP server answers itself: Streamable HTTP at
// /mcp, the SSE transport at /sse and /message.
var ownServerPaths = []string{"/mcp", "/sse", "/message"}

func decodePolicy(d *Decoder, n *yaml.Node, p string) (PolicyConfig, bool) {
	pc := PolicyConfig{Pos: d.Pos(n), Path: p}
	match := func(dst **PrincipalMatch) func(*yaml.Node, string) {
		return func(v *yaml.Node, p string) {
			m := &PrincipalMatch{}
			d.Mapping(v, p, "a principal match", Fields{
				"principals": func(v *yaml.Node, p string) { m.Principals = d.Strings(v, p) },
				"roles":      func(v *yaml.Node, p string) { m.Roles = d.Strings(v, p) },
				"scopes":     func(v *yaml.Node, p string) { m.Scopes = d.Strings(v, p) },
			})
			*dst = m
		}
	}
	ok := d.Mapping(n, p, "a policy", Fields{
		"tools": func(v *yaml.Node, p string) { pc.Tools = decodeGlobs(d, v, p) },
		"allow": match(&pc.Allow),
		"deny":  match(&pc.Deny),
		"arguments": func(v *yaml.Node, p string) {
			pc.Arguments, pc.ArgumentsPos = d.String(v, p), d.Pos(v)
		},
		"result": func(v *yaml.Node, p string) { pc.Result, pc.ResultPos = d.String(v, p), d.Pos(v) },
		"rate": func(v *yaml.Node, p string) {
			pc.Rate = d.String(v, p)
			d.checkGatewayLimit(v, p, CheckGatewayRate, pc.Rate, checkGatewayRate)
		},
		"quota": func(v *yaml.Node, p string) {
			pc.Quota = d.String(v, p)
			d.checkGatewayLimit(v, p, CheckGatewayQuota, pc.Quota, checkGatewayQuota)
		},
		"max_result_bytes": func(v *yaml.Node, p string) { pc.MaxResultBytes = d.ByteSize(v, p) },
		"timeout": func(v *yaml.Node, p string) {
			pc.Timeout = d.Duration(v, p)
			if pc.Timeout < 0 {
				d.Errorf(v, p, "timeout must not be negative")
			}
		},
	}, "tools")
	return pc, ok && d.desc == nil
}

// checkGatewayLimit checks a rate or quota with the check the policy package
// registered, else with local, a syntax check of the same forms.
func (d *Decoder) checkGatewayLimit(n *yaml.Node, p, name, value string, local ValueCheck) {
	if d.desc != nil || value == "" {
		return
	}
	valueChecksMu.RLock()
	check := valueChecks[name]
	valueChecksMu.RUnlock()
	if check == nil {
		check = local
	}
	if msg, hint := check(value); msg != "" {
		d.Errorf(n, p, "%s", msg).Hint = hint
	}
}

var (
	gatewayRatePattern  = regexp.MustCompile(`^\s*[1-9][0-9]{0,9}\s*/\s*(s|m|h)\s*$`)
	gatewayQuotaPattern = regexp.MustCompile(`^\s*[1-9][0-9]{0,11}\s*/\s*(minute|hour|day)\s*$`)
)

func checkGatewayRate(s string) (string, string) {
	if gatewayRatePattern.MatchString(s) {
		return "", ""
	}
	return fmt.Sprintf("rate %q is not <n>/<s|m|h>", s), "for example 10/s (ten calls a second per caller and tool) or 100/m"
}

func checkGatewayQuota(s string) (string, string) {
	if gatewayQuotaPattern.MatchString(s) {
		return "", ""
	}
	return fmt.Sprintf("quota %q is not <n>/<minute|hour|day>", s), "for example 1000/day (calls per caller and tool in a day)"
}

// Audit arguments settings (AuditConfig.Arguments).
var auditArgumentsValues = []string{"digest", "redacted", "full", "none"}

func decodeAudit(d *Decoder, v *yaml.Node, p string) *AuditConfig {
	a := &AuditConfig{Pos: d.Pos(v)}
	d.Mapping(v, p, "audit", Fields{
		"sink": func(v *yaml.Node, p string) {
			a.Sink = d.String(v, p)
			if d.desc == nil && a.Sink == "" {
				d.Errorf(v, p, "audit sink is empty").Hint = "log, or the URI of a file, kafka or postgres endpoint"
			}
		},
		"arguments": func(v *yaml.Node, p string) {
			d.Doc(v, "", auditArgumentsValues...)
			a.Arguments = d.String(v, p)
			if d.desc == nil && !slices.Contains(auditArgumentsValues, a.Arguments) {
				d.Errorf(v, p, "unknown audit arguments %q", a.Arguments).Hint = hintOr(DidYouMean(a.Arguments, auditArgumentsValues),
					"digest (a SHA-256 of the arguments, the default), redacted, full or none")
			}
		},
		"max_file_bytes": func(v *yaml.Node, p string) { a.MaxFileBytes = d.ByteSize(v, p) },
		"keep_files": func(v *yaml.Node, p string) {
			a.KeepFiles = d.Int(v, p)
			if a.KeepFiles < 0 {
				d.Errorf(v, p, "keep_files must not be negative")
			}
		},
	}, "sink")
	return a
}
