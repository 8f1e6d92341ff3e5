package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// maxFileBytes bounds one configuration file; a config larger than this is a mistake.
const maxFileBytes = 16 << 20

// Load reads and merges the given YAML files. On configuration problems it returns an
// [Errors] listing all of them AND the partially decoded config (elements with errors
// are kept when they still make sense, duplicates are dropped), so that callers such
// as `helix validate` can go on building steps and report those errors too. The config
// is nil only when nothing could be read.
func Load(files ...string) (*Config, error) {
	if len(files) == 0 {
		return nil, errors.New("no configuration file given")
	}
	cfg := &Config{}
	var errs Errors
	for _, f := range files {
		if e := markdownByName(f); e != nil {
			errs = append(errs, e)
			continue
		}
		data, err := readFile(f)
		if err != nil {
			errs = append(errs, &Error{Pos: Pos{File: f}, Msg: err.Error()})
			continue
		}
		errs = append(errs, cfg.add(f, data)...)
	}
	errs = append(errs, cfg.finish()...)
	errs = errs.WithoutFollowOns()
	if len(cfg.Files) == 0 {
		return nil, errs
	}
	return cfg, errs.Err()
}

func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("read config: file is larger than %d bytes", maxFileBytes)
	}
	return data, nil
}

// LoadBytes loads one in-memory document named name (used in positions). Like Load it
// returns the partial config together with the errors.
func LoadBytes(name string, data []byte) (*Config, error) {
	cfg := &Config{}
	errs := cfg.add(name, data)
	errs = append(errs, cfg.finish()...)
	return cfg, errs.WithoutFollowOns().Err()
}

// add parses one file (every YAML document in it) and merges it into c.
func (c *Config) add(file string, data []byte) (errs Errors) {
	c.Files = append(c.Files, file)
	defer func() {
		// The YAML parser is not ours; a panic on hostile input must still be an error.
		if r := recover(); r != nil {
			errs = append(errs, &Error{Pos: Pos{File: file}, Msg: fmt.Sprintf("cannot parse YAML: %v", r)})
		}
	}()
	if e := notYAMLText(file, data); e != nil {
		return Errors{e}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	lines := bytes.Split(data, []byte("\n"))
	for content := false; ; {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			if !content {
				return Errors{emptyFileError(file, data)}
			}
			return errs
		}
		if err != nil {
			if e := unparsableFile(file, data); e != nil {
				return Errors{e}
			}
			return append(errs, yamlError(file, err))
		}
		if e := notAMapping(file, data, &doc); e != nil {
			return append(errs, e)
		}
		content = content || !isEmptyDocument(&doc)
		fixBlockScalarPositions(&doc, lines, 0)
		d := NewDecoder(file)
		resolveEnv(d, &doc, lines, false, 0)
		c.decodeDocument(d, &doc)
		errs = append(errs, d.Errors()...)
		c.Warnings = append(c.Warnings, d.Warnings()...)
	}
}

var yamlLineRe = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// yamlError turns a parser error ("yaml: line 7: mapping values are not allowed in this
// context") into an Error at that line.
func yamlError(file string, err error) *Error {
	msg := err.Error()
	pos := Pos{File: file}
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			pos.Line, _ = strconv.Atoi(m[1])
		}
		msg = m[2]
	}
	e := &Error{Pos: pos, Msg: "invalid YAML: " + msg}
	if strings.Contains(msg, "mapping values are not allowed") {
		e.Hint = "check the indentation of this line and the one before it; a value cannot be followed by a nested key"
	}
	if strings.Contains(msg, "found character that cannot start any token") {
		e.Hint = "YAML does not allow tabs for indentation; use spaces"
	}
	return e
}

// fixBlockScalarPositions moves the position of literal (|) and folded (>) scalars
// from the indicator to the first line of their content: that is where a Starlang
// script starts, so its line and column numbers map onto the file by simple addition.
func fixBlockScalarPositions(n *yaml.Node, lines [][]byte, depth int) {
	if n == nil || depth > 10000 {
		return
	}
	if n.Kind == yaml.ScalarNode && (n.Style&(yaml.LiteralStyle|yaml.FoldedStyle)) != 0 && n.Line > 0 {
		for i := n.Line; i < len(lines); i++ { // lines[i] is 1-based line i+1
			text := string(bytes.TrimRight(lines[i], "\r"))
			if strings.TrimSpace(text) == "" {
				continue
			}
			n.Line = n.Line + 1
			n.Column = len(text) - len(strings.TrimLeft(text, " ")) + 1
			break
		}
		return
	}
	for _, ch := range n.Content {
		fixBlockScalarPositions(ch, lines, depth+1)
	}
}

// resolveEnv replaces ${env:NAME} in every scalar except Starlang scripts. Aliases are
// not followed: the anchored node is visited where it is defined.
//
// Values that land in a secret position are added to the process's secret set
// (internal/redact), so that no error, log record or span shows them: see
// [registerSecrets].
func resolveEnv(d *Decoder, n *yaml.Node, lines [][]byte, script bool, depth int) {
	resolveEnvIn(d, n, lines, script, false, depth)
}

func resolveEnvIn(d *Decoder, n *yaml.Node, lines [][]byte, script, secret bool, depth int) {
	if n == nil || depth > 10000 {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if script || !strings.Contains(n.Value, "${env:") {
			return
		}
		v, err := expandEnv(n.Value, func(pos int, value string) { registerSecrets(n.Value, pos, value, secret) })
		if err != nil {
			reportEnvProblems(d, n, lines)
			return
		}
		d.keepRaw(n)
		n.Value = v
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			isKey := k.Kind == yaml.ScalarNode
			resolveEnvIn(d, n.Content[i+1], lines, isKey && k.Value == "starlang", secret || isKey && secretKey(k.Value), depth+1)
		}
	default:
		for _, ch := range n.Content {
			resolveEnvIn(d, ch, lines, false, secret, depth+1)
		}
	}
}

// secretKey reports whether the values under a mapping key are secrets: auth:
// blocks, headers: maps (model and MCP headers carry keys), tokens, API keys,
// passwords. A key naming a file (key_file, cert_file) holds a path, not a secret.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	if strings.HasSuffix(k, "file") || strings.HasSuffix(k, "path") || strings.HasSuffix(k, "dir") {
		return false
	}
	for _, word := range []string{"auth", "header", "token", "key", "secret", "password", "passwd", "credential", "cookie", "dsn"} {
		if strings.Contains(k, word) {
			return true
		}
	}
	return false
}

// registerSecrets adds value, resolved from ${env:…} at byte pos of the scalar raw,
// to the secret set when it is in a secret position: under a secret key, or in
// the user info or the query of a URL (?appid=${env:KEY}). A value that is a URL
// itself (dsn: ${env:DATABASE_URL}) gives its password and query values. Short
// values are ignored by the set (redact.MinSecretLen).
func registerSecrets(raw string, pos int, value string, secret bool) {
	if secret || inURLSecretPart(raw, pos) {
		redact.AddSecret(value)
	}
	if u, err := url.Parse(value); err == nil && strings.Contains(value, "://") {
		if p, ok := u.User.Password(); ok {
			redact.AddSecret(p)
		}
		for _, vs := range u.Query() {
			redact.AddSecret(vs...)
		}
	}
}

// inURLSecretPart reports whether byte pos of raw is in the user info or the query
// of a URL written in raw.
func inURLSecretPart(raw string, pos int) bool {
	before := raw[:pos]
	i := strings.LastIndex(before, "://")
	if i < 0 {
		return false
	}
	afterScheme := raw[i+3:]
	if strings.ContainsRune(before[i+3:], '?') {
		return true
	}
	authority := afterScheme
	if j := strings.IndexAny(afterScheme, "/?#"); j >= 0 {
		authority = afterScheme[:j]
	}
	// In the authority and before its last @: the user info.
	at := strings.LastIndexByte(authority, '@')
	return at >= 0 && pos-(i+3) < at
}

// expandEnv substitutes ${env:NAME} and ${env:NAME:-default} and leaves every other
// ${…} untouched.
// Each substitution is reported to found (when not nil) with its byte position in
// the original s and its value.
func expandEnv(s string, found func(pos int, value string)) (string, error) {
	consumed := 0
	var b strings.Builder
	for {
		i := strings.Index(s, "${env:")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated placeholder %q: add the closing }", s[i:])
		}
		// NAME or NAME:-default (default when unset or empty), as in pkg/uri.
		v, err := uri.Env(s[i+len("${env:") : i+j])
		if err != nil {
			return "", err
		}
		if found != nil {
			found(consumed+i, v)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		consumed += i + j + 1
		s = s[i+j+1:]
	}
}

var topLevelKeys = []string{"helix", "workflows", "tools", "agents", "pipelines", "mcps", "resources", "prompts", "tests"}

// decodeList decodes a top-level list (workflows:, tools: …) item by item, keeping
// the items that decoded; errors are collected by d.
func decodeList[T any](d *Decoder, v *yaml.Node, p, name string, decode func(*Decoder, *yaml.Node, string) (T, bool)) []T {
	items, _ := d.Sequence(v, p, name)
	var out []T
	for i, it := range items {
		if x, ok := decode(d, it, IndexPath(p, i)); ok {
			out = append(out, x)
		}
	}
	return out
}

func (c *Config) decodeDocument(d *Decoder, doc *yaml.Node) {
	root := d.Resolve(doc)
	if IsNull(root) {
		return
	}
	d.Mapping(root, "", "the configuration", Fields{
		"helix": func(v *yaml.Node, p string) { c.decodeHelix(d, v, p) },
		"workflows": func(v *yaml.Node, p string) {
			c.Workflows = append(c.Workflows, decodeList(d, v, p, "workflows", decodeWorkflow)...)
		},
		"tools": func(v *yaml.Node, p string) { c.Tools = append(c.Tools, decodeList(d, v, p, "tools", decodeTool)...) },
		"agents": func(v *yaml.Node, p string) {
			c.Agents = append(c.Agents, decodeList(d, v, p, "agents", decodeAgent)...)
		},
		"pipelines": func(v *yaml.Node, p string) {
			c.Pipelines = append(c.Pipelines, decodeList(d, v, p, "pipelines", decodePipeline)...)
		},
		"resources": func(v *yaml.Node, p string) {
			c.Resources = append(c.Resources, decodeList(d, v, p, "resources", decodeResource)...)
		},
		"prompts": func(v *yaml.Node, p string) {
			c.Prompts = append(c.Prompts, decodeList(d, v, p, "prompts", decodePrompt)...)
		},
		"tests": func(v *yaml.Node, p string) { c.Tests = append(c.Tests, decodeList(d, v, p, "tests", decodeTest)...) }, // tests.go
		"mcps": func(v *yaml.Node, p string) {
			c.MCPs = append(c.MCPs, decodeList(d, v, p, "mcps", func(d *Decoder, n *yaml.Node, p string) (MCPServerConfig, bool) {
				return decodeMCPServer(d, n, p, topLevelMCPs)
			})...)
		},
	})
}

func (c *Config) decodeHelix(d *Decoder, n *yaml.Node, path string) {
	h := &c.Helix
	fields := Fields{
		"name":                func(v *yaml.Node, p string) { h.Name = d.String(v, p) },
		"starlang_max_memory": func(v *yaml.Node, p string) { h.StarlangMaxMemory = d.ByteSize(v, p) },
		"log_level": func(v *yaml.Node, p string) {
			d.Doc(v, "The log level (the --log-level flag wins).", "debug", "info", "warn", "warning", "error")
			h.LogLevel = d.String(v, p)
			if !oneOf(h.LogLevel, "debug", "info", "warn", "warning", "error") {
				d.Errorf(v, p, "unknown log level %q", h.LogLevel).Hint = "use debug, info, warn or error"
			}
		},
		"shutdown_timeout": func(v *yaml.Node, p string) { h.ShutdownTimeout = d.Duration(v, p) },
		"cluster":          func(v *yaml.Node, p string) { decodeCluster(d, v, p, &h.Cluster) }, // cluster.go
		"tracing":          func(v *yaml.Node, p string) { decodeTracing(d, v, p, &h.Tracing) }, // tracing.go
		"data_dir": func(v *yaml.Node, p string) {
			d.Doc(v, "Where Helix keeps what it stores on disk (the embedded stores of pipelines, under rag/<id>; durable runs, durable.db). Default .helix.")
			h.DataDir = d.String(v, p)
		},
		"durable": func(v *yaml.Node, p string) {
			h.Durable = d.Bool(v, p)
			h.DurablePos = d.Pos(v)
		},
		"durable_store": func(v *yaml.Node, p string) {
			h.DurableStore = d.String(v, p)
			checkDurableStore(d, v, p, h.DurableStore)
		},
		"replica_id":             func(v *yaml.Node, p string) { h.ReplicaID = d.String(v, p) },
		"durable_max_checkpoint": func(v *yaml.Node, p string) { h.DurableMaxCheckpoint = d.ByteSize(v, p) },
		"management": func(v *yaml.Node, p string) {
			m := &h.Management
			m.Pos = d.Pos(v)
			d.Mapping(v, p, "helix.management", listenerFields(d, &m.Listener, Fields{
				"addr":     func(v *yaml.Node, p string) { m.Addr = d.String(v, p) },
				"enabled":  func(v *yaml.Node, p string) { b := d.Bool(v, p); m.Enabled = &b },
				"required": func(v *yaml.Node, p string) { m.Required = d.Bool(v, p) },
			}))
		},
		"console": func(v *yaml.Node, p string) { decodeConsole(d, v, p, &h.Console) }, // console_decode.go
		"mcp": func(v *yaml.Node, p string) {
			d.Mapping(v, p, "helix.mcp", Fields{
				"replay_budget": func(v *yaml.Node, p string) { h.MCP.ReplayBudget = d.ByteSize(v, p) },
				"servers": func(v *yaml.Node, p string) {
					h.MCP.Servers = append(h.MCP.Servers, decodeList(d, v, p, "helix.mcp.servers", func(d *Decoder, n *yaml.Node, p string) (MCPServerConfig, bool) {
						return decodeMCPServer(d, n, p, helixMCPServers)
					})...)
				},
			})
		},
	}
	// helix.callbacks: the links that resolve waiting steps (callbacks.go)
	fields["callbacks"] = func(v *yaml.Node, p string) { decodeCallbacks(d, v, p, &h.Callbacks) }
	addModuleFields(d, h, fields) // modules.go: helix.kafka …
	d.Mapping(n, path, "helix", fields)
}

func oneOf(s string, options ...string) bool {
	for _, o := range options {
		if s == o {
			return true
		}
	}
	return false
}

// checkTransport reports an MCP transport other than http, sse or stdio.
func checkTransport(d *Decoder, v *yaml.Node, p, t string) {
	d.Doc(v, "The MCP transport: http (Streamable HTTP at /mcp, the default), sse or stdio.", "http", "sse", "stdio")
	if t != "" && !oneOf(t, "http", "sse", "stdio") {
		d.Errorf(v, p, "unknown MCP transport %q", t).Hint = hintOr(DidYouMean(t, []string{"http", "sse", "stdio"}), "use http, sse or stdio")
	}
}

func hintOr(h, def string) string {
	if h != "" {
		return h
	}
	return def
}

// sessionLimitFields adds the keys of [SessionLimits] to f.
func sessionLimitFields(d *Decoder, l *SessionLimits, f Fields) Fields {
	limit := func(dst *int, key, def string) func(*yaml.Node, string) {
		return func(v *yaml.Node, p string) {
			if *dst = d.Int(v, p); *dst < -1 {
				d.Errorf(v, p, "%s must be a number of sessions, 0 for the default (%s) or -1 for no limit", key, def).Hint =
					"at the limit the session idle longest is closed; -1 lifts the limit (memory then bounds the sessions)"
			}
		}
	}
	f["max_sessions"] = limit(&l.MaxSessions, "max_sessions", "10000")
	f["max_sessions_per_principal"] = limit(&l.MaxSessionsPerPrincipal, "max_sessions_per_principal", "1000")
	f["max_concurrent_calls"] = func(v *yaml.Node, p string) {
		if l.MaxConcurrentCalls = d.Int(v, p); l.MaxConcurrentCalls < -1 {
			d.Errorf(v, p, "max_concurrent_calls must be a number of requests, 0 for the default (64) or -1 for no limit").Hint =
				"the requests of one session beyond it (a batch's, parallel POSTs) wait for one to finish"
		}
	}
	f["admission"] = func(v *yaml.Node, p string) { l.Admission = decodeAdmission(d, v, p) }
	return f
}

// decodeAdmission decodes `admission:` of an MCP server.
func decodeAdmission(d *Decoder, v *yaml.Node, p string) *AdmissionConfig {
	a := &AdmissionConfig{Pos: d.Pos(v)}
	d.Mapping(v, p, "admission", Fields{
		"max_running": func(v *yaml.Node, p string) {
			s := d.String(v, p)
			if d.desc != nil || s == "auto" {
				return
			}
			n64, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 32)
			n := int(n64)
			if err != nil || n < 1 {
				d.Errorf(v, p, "admission max_running must be a number of requests (at least 1) or auto, not %q", s).Hint =
					"auto adapts the limit to what the server can do; a number fixes it"
				return
			}
			a.MaxRunning = n
		},
		"queue": func(v *yaml.Node, p string) {
			if a.Queue = d.Int(v, p); a.Queue < -1 {
				d.Errorf(v, p, "admission queue must be a number of requests, 0 for the default (max_running) or -1 for none")
			}
		},
		"queue_timeout": func(v *yaml.Node, p string) { a.QueueTimeout = d.Duration(v, p) }, // negative: refused by Duration
	}, "max_running")
	return a
}

// securityFields adds the keys of [Security] to f.
func securityFields(d *Decoder, s *Security, f Fields) Fields {
	f["api_keys"] = func(v *yaml.Node, p string) { s.APIKeys, s.APIKeyPrincipals = d.apiKeys(v, p) }
	f["trusted_proxies"] = func(v *yaml.Node, p string) { s.TrustedProxies = d.Strings(v, p) }
	f["proxy_protocol"] = func(v *yaml.Node, p string) { s.ProxyProtocol = d.Bool(v, p) }
	f["rate_limit"] = func(v *yaml.Node, p string) {
		s.RateLimit = d.Int(v, p)
		if s.RateLimit < 0 {
			d.Errorf(v, p, "rate_limit must not be negative")
		}
	}
	f["rate_limit_store"] = func(v *yaml.Node, p string) {
		s.RateLimitStore, s.RateLimitStorePos = d.String(v, p), d.Pos(v)
		d.checkValue(v, p, CheckRateLimitStore, s.RateLimitStore) // a Redis URL: redislimit checks it
	}
	f["rate_limit_store_fallback"] = func(v *yaml.Node, p string) {
		d.Doc(v, "", RateLimitFallbackLocal, RateLimitFallbackRefuse)
		s.RateLimitStoreFallback = d.String(v, p)
		if d.desc == nil && !oneOf(s.RateLimitStoreFallback, RateLimitFallbackLocal, RateLimitFallbackRefuse) {
			fallbacks := []string{RateLimitFallbackLocal, RateLimitFallbackRefuse}
			d.Errorf(v, p, "unknown rate_limit_store_fallback %q", s.RateLimitStoreFallback).Hint = hintOr(DidYouMean(s.RateLimitStoreFallback, fallbacks),
				"local: while the store cannot answer each process limits alone (the default); refuse: answer 503 until it is back")
		}
	}
	f["auth_failure_limit"] = func(v *yaml.Node, p string) {
		s.AuthFailureLimit = d.Int(v, p)
		if s.AuthFailureLimit < -1 {
			d.Errorf(v, p, "auth_failure_limit must be a number of failures, 0 for the default (10) or -1 for no limit")
		}
	}
	f["auth_failure_window"] = func(v *yaml.Node, p string) {
		s.AuthFailureWindow = d.Duration(v, p)
		if s.AuthFailureWindow < 0 {
			d.Errorf(v, p, "auth_failure_window must not be negative")
		}
	}
	f["max_body_bytes"] = func(v *yaml.Node, p string) {
		s.MaxBodyBytes = d.Int64(v, p)
		if s.MaxBodyBytes < -1 {
			d.Errorf(v, p, "max_body_bytes must be a number of bytes, 0 for the default (4 MiB) or -1 for no limit").Hint =
				"-1 lifts the limit entirely; only do that behind a gateway that limits bodies itself"
		}
	}
	f["cors_origins"] = func(v *yaml.Node, p string) { s.CORSOrigins = d.Strings(v, p) }
	f["allowed_tools"] = func(v *yaml.Node, p string) { s.AllowedTools = d.Strings(v, p) }
	f["blocked_tools"] = func(v *yaml.Node, p string) { s.BlockedTools = d.Strings(v, p) }
	f["auth"] = func(v *yaml.Node, p string) {
		a := &OAuthConfig{Pos: d.Pos(v)}
		if d.Mapping(v, p, "auth", Fields{
			"issuer":       func(v *yaml.Node, p string) { a.Issuer = d.String(v, p) },
			"audience":     func(v *yaml.Node, p string) { a.Audience = d.String(v, p) },
			"jwks_url":     func(v *yaml.Node, p string) { a.JWKSURL = d.String(v, p) },
			"resource_url": func(v *yaml.Node, p string) { a.ResourceURL = d.String(v, p) },
			"roles_claim":  func(v *yaml.Node, p string) { a.RolesClaim = d.String(v, p) },
			"scopes": func(v *yaml.Node, p string) {
				pairs, _ := d.Pairs(v, p, "auth.scopes")
				a.Scopes = map[string][]string{}
				for _, pr := range pairs {
					a.Scopes[pr.Key] = d.Strings(pr.Value, KeyPath(p, pr.Key))
				}
			},
		}, "issuer") {
			s.Auth = a
		}
	}
	return listenerFields(d, &s.Listener, f)
}

// apiKeys decodes api_keys: a list whose entries are keys ("${env:KEY}") or
// mappings {key, name, roles} naming who the key stands for; a single key may
// be written without the list. The principals have the keys' indexes.
func (d *Decoder) apiKeys(v *yaml.Node, p string) ([]string, []APIKeyPrincipal) {
	if d.desc == nil {
		v = d.Resolve(v)
		if IsNull(v) {
			return nil, nil
		}
	}
	if v != nil && v.Kind == yaml.ScalarNode {
		return []string{d.String(v, p)}, []APIKeyPrincipal{{}}
	}
	items, ok := d.Sequence(v, p, "api_keys")
	if !ok {
		return nil, nil
	}
	keys := make([]string, 0, len(items))
	principals := make([]APIKeyPrincipal, 0, len(items))
	for i, item := range items {
		ip := IndexPath(p, i)
		if item.Kind != yaml.MappingNode {
			keys, principals = append(keys, d.String(item, ip)), append(principals, APIKeyPrincipal{})
			continue
		}
		var key string
		var who APIKeyPrincipal
		d.Mapping(item, ip, "api_key", Fields{
			"key":   func(v *yaml.Node, p string) { key = d.String(v, p) },
			"name":  func(v *yaml.Node, p string) { who.Name = d.String(v, p) },
			"roles": func(v *yaml.Node, p string) { who.Roles = d.Strings(v, p) },
		}, "key")
		keys, principals = append(keys, key), append(principals, who)
	}
	return keys, principals
}

// listenerFields adds the connection limits of an HTTP listener to f. Omitted or
// 0 means the default; `off` (or -1) switches a limit off, stored as -1.
func listenerFields(d *Decoder, l *ListenerLimits, f Fields) Fields {
	off := func(v *yaml.Node) bool {
		_, ok := d.Keyword(v, "off", "-1")
		return ok
	}
	timeout := func(dst *time.Duration) func(*yaml.Node, string) {
		return func(v *yaml.Node, p string) {
			if off(v) {
				*dst = -1
				return
			}
			*dst = d.Duration(v, p)
		}
	}
	count := func(dst *int) func(*yaml.Node, string) {
		return func(v *yaml.Node, p string) {
			if off(v) {
				*dst = -1
				return
			}
			if *dst = d.Int(v, p); *dst < 0 {
				d.Errorf(v, p, "%s must be a number of connections", p[strings.LastIndexByte(p, '.')+1:]).Hint =
					"use 0 (or leave it out) for the default, or off for no limit"
			}
		}
	}
	f["read_timeout"] = timeout(&l.ReadTimeout)
	f["idle_timeout"] = timeout(&l.IdleTimeout)
	f["write_timeout"] = timeout(&l.WriteTimeout)
	f["max_connections"] = count(&l.MaxConnections)
	f["max_connections_per_ip"] = count(&l.MaxConnectionsPerIP)
	return f
}

// checkJSONSchema reports input_schema text that is not a JSON object, pointing at
// the line inside the YAML value where the JSON breaks.
func checkJSONSchema(d *Decoder, v *yaml.Node, p, text string) {
	var obj map[string]any
	err := json.Unmarshal([]byte(text), &obj)
	if err == nil {
		return
	}
	pos := d.Pos(v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := int(min(max(se.Offset, 1), int64(len(text))))
		before := text[:off]
		line := strings.Count(before, "\n")
		col := off - strings.LastIndexByte(before, '\n')
		if line > 0 {
			pos.Line += line
			pos.Col = pos.Col + col - 2
		} else if v.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
			pos.Col += col
		} else {
			pos.Col += col - 1
		}
	}
	d.Add(&Error{Pos: pos, Path: p, Msg: fmt.Sprintf("input_schema is not a JSON object: %v", err),
		Hint: "input_schema is JSON text, for example '{\"type\":\"object\",\"properties\":{...}}'"})
}

// decodeTrigger accepts `trigger: URI` and `trigger: {uri: URI, parameters: {…}}`;
// parameters join the URI's query as a target's do ([WithParameters]), so that
// CheckEndpoint checks them with the URI's own options.
func decodeTrigger(d *Decoder, v *yaml.Node, p string) (string, Pos) {
	v = d.Resolve(v)
	if v != nil && v.Kind == yaml.MappingNode {
		var u string
		var params []Pair
		pos := d.Pos(v)
		d.Mapping(v, p, "trigger", Fields{
			"uri": func(v *yaml.Node, p string) {
				u, pos = d.URI(v, p), d.Pos(v)
			},
			"parameters": func(v *yaml.Node, p string) { params = decodeParameters(d, v, p) },
		}, "uri")
		if len(params) > 0 && u != "" {
			u = WithParameters(u, params)
		}
		return u, pos
	}
	return d.URI(v, p), d.Pos(v)
}

// triggerRaw is the trigger URI of v (as decodeTrigger reads it) as written, before
// ${env:…} resolution.
func triggerRaw(d *Decoder, v *yaml.Node) string {
	v = d.Resolve(v)
	if v == nil || v.Kind != yaml.MappingNode {
		return d.Raw(v)
	}
	raw := d.Raw(mappingValue(d, v, "uri"))
	params := mappingValue(d, v, "parameters")
	if raw == "" || params == nil || params.Kind != yaml.MappingNode {
		return raw
	}
	var pairs []Pair
	for i := 0; i+1 < len(params.Content); i += 2 {
		pairs = append(pairs, Pair{Key: params.Content[i].Value, Value: d.Resolve(params.Content[i+1])})
	}
	return appendParameters(raw, pairs, d.Raw)
}

func decodeWorkflow(d *Decoder, n *yaml.Node, path string) (WorkflowConfig, bool) {
	w := WorkflowConfig{Pos: d.Pos(n), Path: path}
	var fromSet bool
	setFrom := func(v *yaml.Node, p string) {
		// Decoded before the check, so that the second one's own mistakes are
		// reported too (and describe mode sees both keys read a trigger).
		from, pos := decodeTrigger(d, v, p)
		if fromSet {
			d.Errorf(v, p, "a workflow has one trigger: use either trigger: or from:, not both")
			return
		}
		fromSet = true
		w.From, w.FromPos = from, pos
		w.FromRaw = triggerRaw(d, v)
	}
	ok := d.Mapping(n, path, "a workflow", Fields{
		"id":            func(v *yaml.Node, p string) { w.ID = d.String(v, p) },
		"description":   func(v *yaml.Node, p string) { w.Description = d.String(v, p) },
		"trigger":       setFrom,
		"from":          setFrom,
		"input":         func(v *yaml.Node, p string) { w.Input, w.InputPos = declaredFields(d, v, p), d.Pos(v) },
		"output":        func(v *yaml.Node, p string) { w.Output, w.OutputPos = declaredFields(d, v, p), d.Pos(v) },
		"steps":         func(v *yaml.Node, p string) { w.Steps = d.Steps(v, p) },
		"error_handler": func(v *yaml.Node, p string) { w.ErrorHandler = decodeErrorHandler(d, v, p) },
		"on_error":      func(v *yaml.Node, p string) { w.OnError = decodeOnError(d, v, p) },
		"durable":       func(v *yaml.Node, p string) { w.Durable = d.Bool(v, p) },
	}, "id")
	if ok && w.ID != "" && w.From == "" {
		d.Warn(n, path, "workflow %q has no trigger: it is not exposed as an MCP tool and never runs", w.ID).Hint =
			"add trigger: direct://" + w.ID + " (or another URI) if it should run"
	}
	return w, ok && w.ID != ""
}

// decodeOnError reads `on_error: {status: 503}` or
// `on_error: {status: {conflict: 422, timeout: 503}}`.
func decodeOnError(d *Decoder, n *yaml.Node, path string) *OnErrorConfig {
	oe := &OnErrorConfig{Pos: d.Pos(n)}
	d.Mapping(n, path, "on_error", Fields{
		"status": func(v *yaml.Node, p string) {
			v = d.Resolve(v)
			if v != nil && v.Kind == yaml.MappingNode {
				oe.StatusByClass = decodeStatusByClass(d, v, p)
				return
			}
			oe.Status = decodeErrorStatus(d, v, p)
		},
	})
	return oe
}

// decodeStatusByClass reads a mapping of failure class to HTTP status.
func decodeStatusByClass(d *Decoder, n *yaml.Node, path string) map[string]int {
	byClass := map[string]int{}
	fields := Fields{}
	for class := range exchange.FailureClasses {
		fields[class] = func(v *yaml.Node, p string) {
			if status := decodeErrorStatus(d, v, p); status != 0 {
				byClass[class] = status
			}
		}
	}
	d.Mapping(n, path, "on_error.status", fields)
	return byClass
}

// decodeErrorStatus reads an HTTP error status (400-599); 0 after an error.
func decodeErrorStatus(d *Decoder, n *yaml.Node, path string) int {
	before := len(d.errs)
	status := d.Int(n, path)
	if len(d.errs) > before {
		return 0 // not an integer: said already
	}
	if status < 400 || status > 599 {
		d.Errorf(n, path, "%d is not an error status: give 400-599", status).Hint =
			"on_error answers failures: 4xx when the caller's request is at fault, 5xx when the workflow is"
		return 0
	}
	return status
}

// errorHandlerShape declares a workflow's error_handler (its own description is
// the workflow key's, in settingDocs).
var errorHandlerShape = Shape{Type: TypeObject, What: "error_handler", Keys: []Key{
	{Name: "dead_letter_channel", Shape: Shape{Type: TypeURI, Description: "The endpoint that receives exchanges that failed after all redeliveries."}},
	{Name: "default", Shape: Shape{Type: TypeObject, What: "error_handler.default", Description: "Redelivery policy.", Keys: []Key{
		{Name: "maximum_redeliveries", Shape: Shape{Type: TypeInt, Description: "How many times a failed exchange is tried again; -1 forever. Default 0."}},
		{Name: "redelivery_delay", Shape: Shape{Type: TypeDuration, Description: "Wait before the first redelivery."}},
		{Name: "backoff_multiplier", Shape: Shape{Type: TypeNumber, Description: "Each further redelivery waits this many times longer."}},
		{Name: "maximum_redelivery_delay", Shape: Shape{Type: TypeDuration, Description: "Upper bound of the wait between redeliveries."}},
	}}},
}}

// decodeErrorHandler reads a workflow's error_handler as errorHandlerShape declares
// it, and checks the bounds the shape's own messages would word less clearly.
func decodeErrorHandler(d *Decoder, n *yaml.Node, path string) *ErrorHandlerConfig {
	v := d.Decode(n, path, "error_handler", &errorHandlerShape)
	eh := &ErrorHandlerConfig{Pos: d.Pos(n), DeadLetterChannel: v.String("dead_letter_channel")}
	if d.desc != nil {
		return eh
	}
	dv := v.Object("default")
	if dv == nil {
		return eh
	}
	r := &RedeliveryConfig{Pos: d.Pos(v.NodeOf("default")),
		MaximumRedeliveries: dv.Int("maximum_redeliveries"), RedeliveryDelay: dv.Duration("redelivery_delay"),
		BackoffMultiplier: dv.Float("backoff_multiplier"), MaximumRedeliveryDelay: dv.Duration("maximum_redelivery_delay")}
	if r.MaximumRedeliveries < -1 {
		d.Errorf(dv.NodeOf("maximum_redeliveries"), dv.PathOf("maximum_redeliveries"), "maximum_redeliveries must be -1 (forever), 0 or more")
	}
	if r.BackoffMultiplier < 0 {
		d.Errorf(dv.NodeOf("backoff_multiplier"), dv.PathOf("backoff_multiplier"), "backoff_multiplier must not be negative")
	}
	eh.Default = r
	return eh
}

func decodeTool(d *Decoder, n *yaml.Node, path string) (ToolConfig, bool) {
	t := ToolConfig{Pos: d.Pos(n), Path: path}
	ok := d.Mapping(n, path, "a tool", Fields{
		"id":          func(v *yaml.Node, p string) { t.ID = d.String(v, p) },
		"description": func(v *yaml.Node, p string) { t.Description = d.String(v, p) },
		"input":       func(v *yaml.Node, p string) { t.Input = decodeFields(d, v, p, 0) },
		"output":      func(v *yaml.Node, p string) { t.Output = decodeFields(d, v, p, 0) },
		"steps":       func(v *yaml.Node, p string) { t.Steps = d.Steps(v, p) },
		"durable":     func(v *yaml.Node, p string) { t.Durable = d.Bool(v, p) },
	}, "id", "description", "input", "output")
	if ok && t.Description == "" {
		if desc := mappingValue(d, n, "description"); desc != nil {
			d.Errorf(desc, KeyPath(path, "description"), "a tool's description must not be empty")
		}
	}
	return t, ok && t.ID != ""
}

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(d *Decoder, n *yaml.Node, key string) *yaml.Node {
	n = d.Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return d.Resolve(n.Content[i+1])
		}
	}
	return nil
}

// declaredFields decodes a workflow's input: or output: as a tool's; the result is
// never nil, so that `input: {}` still declares "no arguments expected".
func declaredFields(d *Decoder, n *yaml.Node, path string) []FieldConfig {
	if fields := decodeFields(d, n, path, 0); fields != nil {
		return fields
	}
	return []FieldConfig{}
}

// FieldTypes are the JSON Schema types a tool field may have.
var FieldTypes = []string{"string", "integer", "number", "boolean", "array", "object"}

// decodeFields reads `name: {type: …, description: …}` entries in order. A bare
// scalar is shorthand for the type (`limit: integer`).
func decodeFields(d *Decoder, n *yaml.Node, path string, depth int) []FieldConfig {
	if depth > 32 {
		d.Errorf(n, path, "fields are nested too deeply")
		return nil
	}
	pairs, _ := d.Pairs(n, path, "fields")
	out := make([]FieldConfig, 0, len(pairs))
	for _, pr := range pairs {
		f := decodeField(d, pr.Value, KeyPath(path, pr.Key), depth)
		f.Name = pr.Key
		f.Pos = d.Pos(pr.KeyN)
		out = append(out, f)
	}
	return out
}

func decodeField(d *Decoder, n *yaml.Node, path string, depth int) FieldConfig {
	var f FieldConfig
	if n != nil && n.Kind == yaml.ScalarNode && !IsNull(n) {
		d.Doc(n, "", FieldTypes...)
		f.Type = d.String(n, path)
		checkFieldType(d, n, path, f.Type)
		return f
	}
	var typeNode, defNode *yaml.Node
	d.Mapping(n, path, "a field", Fields{
		"type": func(v *yaml.Node, p string) {
			d.Doc(v, "", FieldTypes...)
			f.Type, typeNode = d.String(v, p), v
		},
		"description": func(v *yaml.Node, p string) { f.Description = d.String(v, p) },
		"required":    func(v *yaml.Node, p string) { f.Required = d.Bool(v, p) },
		"default":     func(v *yaml.Node, p string) { f.Default, defNode = d.Value(v, p), v },
		"enum": func(v *yaml.Node, p string) {
			if items, ok := d.Sequence(v, p, "enum"); ok {
				for i, it := range items {
					f.Enum = append(f.Enum, d.Value(it, IndexPath(p, i)))
				}
			}
		},
		"items": func(v *yaml.Node, p string) {
			it := decodeField(d, v, p, depth+1)
			it.Pos = d.Pos(v)
			f.Items = &it
		},
		"properties": func(v *yaml.Node, p string) { f.Properties = decodeFields(d, v, p, depth+1) },
	}, "type")
	if typeNode != nil {
		checkFieldType(d, typeNode, KeyPath(path, "type"), f.Type)
	}
	if defNode != nil && f.Default != nil && !valueHasType(f.Default, f.Type) {
		d.Errorf(defNode, KeyPath(path, "default"), "default %v is not of type %s", f.Default, f.Type)
	}
	return f
}

func checkFieldType(d *Decoder, n *yaml.Node, path, t string) {
	if !oneOf(t, FieldTypes...) {
		d.Errorf(n, path, "unknown field type %q", t).Hint = hintOr(DidYouMean(t, FieldTypes), "use one of "+strings.Join(FieldTypes, ", "))
	}
}

func valueHasType(v any, t string) bool {
	switch t {
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		_, ok := v.(int)
		return ok
	case "number":
		switch v.(type) {
		case int, float64:
			return true
		}
		return false
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return true // unknown types are reported elsewhere
}

// checkHTTPTransport reports an http_transport other than helix or sdk.
func checkHTTPTransport(d *Decoder, v *yaml.Node, p, t string) {
	d.Doc(v, "The Streamable HTTP implementation: helix (Helix's own, the default) or sdk (the go-sdk's stock handler).", "helix", "sdk")
	if t != "" && !oneOf(strings.ToLower(strings.TrimSpace(t)), "helix", "sdk") {
		d.Errorf(v, p, "unknown http_transport %q", t).Hint = hintOr(DidYouMean(t, []string{"helix", "sdk"}),
			"use helix (Helix's own Streamable HTTP, the default) or sdk (the go-sdk's stock handler)")
	}
}

// checkDurableStore reports a helix.durable_store that is no database URL.
func checkDurableStore(d *Decoder, v *yaml.Node, p, store string) {
	if store == "" {
		return
	}
	u, err := url.Parse(store)
	if err != nil || u.Scheme == "" || u.Host == "" {
		d.Errorf(v, p, "helix.durable_store must be a PostgreSQL URL").Hint =
			"write postgres://user:${env:PGPASSWORD}@host:5432/db, or leave it out for the embedded store under helix.data_dir"
	}
}
