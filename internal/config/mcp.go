package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// mcpServerList says which list an MCP server entry comes from. The lists share
// one model and one decoder; they differ only in the keys the spec gives each
// (see [MCPServerConfig]).
type mcpServerList int

const (
	helixMCPServers mcpServerList = iota // helix.mcp.servers
	topLevelMCPs                         // mcps:
)

// decodeMCPServer decodes one MCP server entry of either list.
func decodeMCPServer(d *Decoder, n *yaml.Node, path string, list mcpServerList) (MCPServerConfig, bool) {
	s := MCPServerConfig{Pos: d.Pos(n), Path: path}
	var exposeKey string // the key that set Expose, to refuse the other one
	expose := func(key string, emptyMeansAll bool) func(*yaml.Node, string) {
		return func(v *yaml.Node, p string) {
			ids := d.Strings(v, p)
			if exposeKey != "" {
				d.Errorf(v, p, "%s and %s are the same setting: write one of them", exposeKey, key).Hint =
					"expose lists the ids to offer as tools; workflows is its older name in helix.mcp.servers"
				return
			}
			exposeKey, s.Expose = key, ids
			switch {
			case len(s.Expose) == 0 && emptyMeansAll:
				s.Expose = nil // spec §5.1: workflows: [] means all
			case s.Expose == nil:
				s.Expose = []string{} // expose: [] means none
			}
		}
	}
	fields := Fields{
		"id": func(v *yaml.Node, p string) { s.ID = d.String(v, p) },
		"transport": func(v *yaml.Node, p string) {
			s.Transport = d.String(v, p)
			checkTransport(d, v, p, s.Transport)
		},
		"addr":                 func(v *yaml.Node, p string) { s.Addr = d.String(v, p) },
		"name":                 func(v *yaml.Node, p string) { s.Name = d.String(v, p) },
		"version":              func(v *yaml.Node, p string) { s.Version = d.String(v, p) },
		"expose":               expose("expose", false),
		"stateless":            func(v *yaml.Node, p string) { s.Stateless = d.Bool(v, p) },
		"session_idle_timeout": func(v *yaml.Node, p string) { s.SessionIdleTimeout = d.Duration(v, p) },
		"http_transport": func(v *yaml.Node, p string) {
			s.HTTPTransport = d.String(v, p)
			checkHTTPTransport(d, v, p, s.HTTPTransport)
		},
		"fast_tool_calls": func(v *yaml.Node, p string) { on := d.Bool(v, p); s.FastToolCalls = &on },
		"tools":           func(v *yaml.Node, p string) { s.Tools = decodeToolOverrides(d, v, p) },
		"request_state":   func(v *yaml.Node, p string) { s.RequestState = decodeRequestState(d, v, p) },
	}
	what, required := "an mcps entry", []string{"id"}
	if list == helixMCPServers {
		what, required = "an MCP server", nil
		fields["enabled"] = func(v *yaml.Node, p string) { s.Enabled = d.Bool(v, p) }
		fields["workflows"] = expose("workflows", true)
	}
	before := len(d.Errors())
	ok := d.Mapping(n, path, what, gatewayFields(d, &s.Gateway, securityFields(d, &s.Security, sessionLimitFields(d, &s.SessionLimits, fields))), required...)
	if list == topLevelMCPs {
		// Keys of the other spelling get a hint that says where they belong.
		for _, e := range d.Errors()[before:] {
			switch e.Msg {
			case `unknown key "workflows" in an mcps entry`:
				e.Hint = "an mcps: entry lists the ids to offer as tools under expose:; workflows: is the helix.mcp.servers spelling"
			case `unknown key "enabled" in an mcps entry`:
				e.Hint = "every mcps: entry runs; remove the entry (or comment it out) to switch the server off"
			}
		}
	}
	return s, ok && (list == helixMCPServers || s.ID != "")
}

// decodeToolOverrides decodes `tools:` of an MCP server: workflow id → override.
func decodeToolOverrides(d *Decoder, v *yaml.Node, p string) map[string]ToolOverride {
	pairs, _ := d.Pairs(v, p, "tools")
	out := map[string]ToolOverride{}
	for _, pr := range pairs {
		o := ToolOverride{Pos: d.Pos(pr.KeyN)}
		d.Mapping(pr.Value, KeyPath(p, pr.Key), "a tool override", Fields{
			"description": func(v *yaml.Node, p string) { o.Description = d.String(v, p) },
			"task":        func(v *yaml.Node, p string) { o.Task = decodeToolTask(d, v, p) },
			"input_schema": func(v *yaml.Node, p string) {
				// A mapping is the schema written as YAML: kept as JSON text, like
				// the JSON text form, so both are advertised and checked alike.
				if rv := d.Resolve(v); rv != nil && rv.Kind == yaml.MappingNode {
					if d.describeAs(v, yaml.MappingNode, &Shape{Type: TypeMap, What: "a JSON Schema"}) {
						return
					}
					b, err := json.Marshal(d.Value(rv, p))
					if err != nil {
						d.Errorf(v, p, "input_schema cannot be written as JSON: %v", err)
						return
					}
					o.InputSchema = string(b)
					return
				}
				o.InputSchema = d.String(v, p)
				checkJSONSchema(d, v, p, o.InputSchema)
			},
		})
		out[pr.Key] = o
	}
	return out
}

// MCPServers returns the MCP servers to build, from both lists: the enabled
// entries of helix.mcp.servers, then every mcps: entry, each in file order. The
// entries are copies with the defaults that depend on the list filled in: Name is
// the written id when no name was given (an mcps: id is its server's name), and
// ID is the id, else the name, else the entry's place in the merged list
// (helix.mcp.servers[2]).
//
// pkg/app builds servers from this list; it is the one place where the two
// spellings meet. Safe for concurrent use as long as c is not modified.
func (c *Config) MCPServers() []MCPServerConfig {
	out := make([]MCPServerConfig, 0, len(c.Helix.MCP.Servers)+len(c.MCPs))
	add := func(s MCPServerConfig, fallback string) {
		if s.Name == "" {
			s.Name = s.ID
		}
		if s.ID == "" {
			s.ID = s.Name
		}
		if s.ID == "" {
			s.ID = fallback
		}
		if s.Path == "" { // built in Go
			s.Path = fallback
		}
		out = append(out, s)
	}
	for i, s := range c.Helix.MCP.Servers {
		if s.Enabled {
			add(s, fmt.Sprintf("helix.mcp.servers[%d]", i))
		}
	}
	for i, s := range c.MCPs {
		add(s, fmt.Sprintf("mcps[%d]", i))
	}
	return out
}

// decodeRequestState decodes `request_state:` of an MCP server.
func decodeRequestState(d *Decoder, v *yaml.Node, p string) *RequestStateConfig {
	rs := &RequestStateConfig{Pos: d.Pos(v)}
	d.Mapping(v, p, "request_state", Fields{
		"key": func(v *yaml.Node, p string) {
			rs.Key = d.String(v, p)
			if d.desc != nil {
				return
			}
			if _, err := DecodeRequestStateKey(rs.Key); err != nil {
				// The message never quotes the key: it is a secret.
				d.Errorf(v, p, "request_state key: %v", err).Hint =
					"make one with: openssl rand -base64 32, and write it as ${env:HELIX_STATE_KEY}; every replica needs the same"
			}
		},
		"ttl": func(v *yaml.Node, p string) {
			rs.TTL = d.Duration(v, p)
			if rs.TTL < 0 {
				d.Errorf(v, p, "request_state ttl must not be negative")
			}
		},
		"store": func(v *yaml.Node, p string) {
			rs.Store = d.String(v, p)
			d.checkValue(v, p, CheckRequestStateStore, rs.Store) // a Redis URL: requeststate checks it
		},
	})
	return rs
}

// Values of a tool override's task: (an MCP task, issue 29's durable tools).
var toolTaskValues = []string{"optional", "required", "forbidden"}

// decodeToolTask decodes `task:` of a tool override.
func decodeToolTask(d *Decoder, v *yaml.Node, p string) string {
	s := d.String(v, p)
	if s != "" && !slices.Contains(toolTaskValues, s) {
		d.Errorf(v, p, "task is %q; it is one of %s", s, strings.Join(toolTaskValues, ", ")).Hint =
			"task: required serves the tool only as an MCP task; its workflow must be durable (durable: true)"
		return ""
	}
	return s
}
