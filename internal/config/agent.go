package config

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Agents are declared once, as Shapes: agentShape for the entries of `agents:` and
// agentStepShape for the value of an `agent:` step. Decoding goes through
// [Decoder.Decode] (unknown keys with did-you-mean, types, enums, required keys),
// the JSON Schema of the file comes from the same declaration, and the rules the
// shape cannot say (url xor command, bounds, the keys only MCP tools take) are
// checked by hand on the decoded [Values].

// Agent types, model providers, agent tool types and MCP transports the decoder
// accepts.
var (
	AgentTypes     = []string{"react"}
	ModelProviders = []string{"openai", "anthropic"}
	AgentToolTypes = []string{"mcp", "workflow", "tool", "agent", "pipeline"}
	mcpTransports  = []string{"http", "sse", "stdio"}
	mcpAuthTypes   = []string{"bearer", "api-key", "oauth2", "mtls"}
)

func str(desc string) Shape { return Shape{Type: TypeString, Description: desc} }

func strList(desc string) Shape {
	return Shape{Type: TypeList, Description: desc, Items: &Shape{Type: TypeString}}
}

func strMap(desc string) Shape {
	return Shape{Type: TypeMap, Description: desc, Values: &Shape{Type: TypeString}}
}

// withDesc returns a copy of sh described by desc.
func withDesc(sh *Shape, desc string) Shape {
	out := *sh
	out.Description = desc
	return out
}

var modelShape = Shape{Type: TypeObject, What: "the model", Description: "The LLM the agent thinks with.", Keys: []Key{
	{Name: "provider", Required: true, Shape: Shape{Type: TypeString, What: "model provider", Enum: ModelProviders,
		Description: "The provider's API: openai (also any OpenAI-compatible gateway through base_url) or anthropic."}},
	{Name: "model", Required: true, Shape: str("The model name, such as gpt-4o or claude-sonnet-4-20250514.")},
	{Name: "api_key", Shape: str("The API key; write it as ${env:NAME}. Default: the provider's environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY).")},
	{Name: "base_url", Shape: str("The API's base URL (http or https), for a gateway or a compatible server. Default: the provider's.")},
	{Name: "temperature", Shape: Shape{Type: TypeNumber, Min: Bound(0), Max: Bound(2), Description: "Sampling temperature, 0 to 2. Default: the provider's."}},
	{Name: "max_tokens", Shape: Shape{Type: TypeInt, Min: Bound(1), Description: "Most tokens of one reply. Default: the runtime's."}},
	{Name: "headers", Shape: strMap("HTTP headers sent with every request to the provider (a gateway's own headers).")},
}}

var mcpServerShape = Shape{Type: TypeObject, What: "mcp_server",
	Description: "The MCP server whose tools the agent may call: url (http, sse) or command and args (stdio).", Keys: []Key{
		{Name: "url", Shape: str("The server's URL (http:// or https://), for the http and sse transports.")},
		{Name: "transport", Shape: Shape{Type: TypeString, What: "MCP transport", Enum: mcpTransports,
			Description: "http (Streamable HTTP), sse or stdio. Default: stdio with command, http with url."}},
		{Name: "command", Shape: str("The program to start for the stdio transport; Helix runs it and stops it with the agent.")},
		{Name: "args", Shape: strList("The arguments of command.")},
		{Name: "env", Shape: strMap("Environment variables of command, added to Helix's own.")},
		{Name: "timeout", Shape: Shape{Type: TypeDuration, Description: "Bound of each call to the server. Default: the MCP client's."}},
	}}

var mcpAuthShape = Shape{Type: TypeObject, What: "auth",
	Description: "How to authenticate to the MCP server (type mcp): bearer {token}, api-key {header, key}, oauth2 {token_url or discover: true, client_id, client_secret or private_key, scopes, enterprise or workload_token} or {login: true}, or mtls {cert_file, key_file, ca_file}. Write secrets as ${env:NAME}.",
	Keys: []Key{
		{Name: "type", Required: true, Shape: Shape{Type: TypeString, What: "auth type", Enum: mcpAuthTypes, Description: "bearer, api-key, oauth2 or mtls."}},
		{Name: "token", Shape: str("bearer: the token.")},
		{Name: "header", Shape: str("api-key: the header that carries the key. Default X-API-Key.")},
		{Name: "key", Shape: str("api-key: the key.")},
		{Name: "token_url", Shape: str("oauth2: the token endpoint (client credentials grant).")},
		{Name: "discover", Shape: Shape{Type: TypeBool, Description: "oauth2: find the token endpoint from the server's metadata on its first 401, instead of token_url (client credentials grant)."}},
		{Name: "login", Shape: Shape{Type: TypeBool, Description: "oauth2: use the login `helix mcp login URL` stored for the server (alone: no other oauth2 key)."}},
		{Name: "client_id", Shape: str("oauth2: the client id.")},
		{Name: "client_secret", Shape: str("oauth2: the client secret.")},
		{Name: "private_key", Shape: str("oauth2 with discover: the client's private key (PEM), to authenticate with a signed JWT (private_key_jwt) instead of client_secret.")},
		{Name: "private_key_file", Shape: str("oauth2 with discover: a file holding the client's private key (PEM), instead of private_key.")},
		{Name: "signing_alg", Shape: str("oauth2: the algorithm that signs the client's JWT (ES256, ES384, ES512, RS256, PS256, EdDSA …). Default: the key's usual one.")},
		{Name: "workload_token", Shape: str("oauth2 with discover: the workload's identity token (a JWT its platform issued), the assertion of the JWT bearer grant (workload identity federation).")},
		{Name: "workload_token_file", Shape: str("oauth2 with discover: the file holding the workload's identity token, read again for every token (platforms rotate it).")},
		{Name: "enterprise", Shape: Shape{Type: TypeObject, What: "enterprise",
			Description: "oauth2 with discover: enterprise-managed authorization: the ID token is exchanged at the enterprise IdP for an ID-JAG, traded for the token at the server's authorization server.",
			Keys: []Key{
				{Name: "idp_token_url", Required: true, Shape: str("The IdP's token endpoint (token exchange).")},
				{Name: "idp_client_id", Required: true, Shape: str("The client's id at the IdP.")},
				{Name: "idp_client_secret", Shape: str("The client's secret at the IdP (none for a public client).")},
				{Name: "id_token", Required: true, Shape: str("The ID token the IdP issued for the person or workload.")},
			}}},
		{Name: "scopes", Shape: Shape{Description: "oauth2: the scopes asked for, a list or one string separated by spaces or commas.",
			AnyOf: []*Shape{{Type: TypeString}, {Type: TypeList, Items: &Shape{Type: TypeString}}}}},
		{Name: "cert_file", Shape: str("mtls: the client certificate (PEM).")},
		{Name: "key_file", Shape: str("mtls: the client key (PEM).")},
		{Name: "ca_file", Shape: str("mtls: the CA that signs the server's certificate (PEM); default the system roots.")},
	}}

var agentToolShape = Shape{Type: TypeObject, What: "an agent tool", Short: "name",
	Description: "A tool the agent may call: the id of a workflow, tool, agent or pipeline, or a mapping (an MCP server's tools with type mcp).",
	Keys: []Key{
		{Name: "name", Required: true, Shape: str("The id of the workflow, tool, agent or pipeline called; for type mcp, the name of this group of tools.")},
		{Name: "type", Shape: Shape{Type: TypeString, What: "agent tool type", Enum: AgentToolTypes,
			Description: "mcp (the tools of mcp_server), workflow, tool, agent or pipeline. Default: mcp with mcp_server, else whatever name is the id of."}},
		{Name: "description", Shape: str("What the tool is for, shown to the model (default: the entry's own description).")},
		{Name: "mcp_server", Shape: mcpServerShape},
		{Name: "auth", Shape: mcpAuthShape},
		{Name: "include", Shape: strList("Only the MCP server's tools whose names match one of these patterns (* ? [a-z], as path.Match). Default all.")},
		{Name: "exclude", Shape: strList("Leave out the MCP server's tools whose names match one of these patterns (as path.Match).")},
		{Name: "on_elicit", Shape: Shape{Type: TypeString, What: "elicitation policy", Enum: []string{"refuse", "defaults", "forward"},
			Description: "How the MCP server's elicitation requests are answered: refuse (the default), defaults (the form's defaults; decline when a required field has none) or forward (ask Helix's own MCP caller)."}},
		{Name: "on_sample", Shape: str("How the MCP server's sampling requests are answered: refuse (the default), forward (ask Helix's own MCP caller's model) or agent:<id> (that agent's model).")},
	}}

var agentMemoryShape = Shape{Type: TypeObject, What: "memory",
	Description: "Conversation memory per session_id: earlier messages are sent again with each run of the same session.", Keys: []Key{
		{Name: "window", Shape: Shape{Type: TypeInt, Min: Bound(1), Description: "Messages kept per session."}},
		{Name: "max_sessions", Shape: Shape{Type: TypeInt, Min: Bound(1), Description: "Sessions kept; the least recently used is forgotten."}},
		{Name: "max_bytes", Shape: Shape{Type: TypeByteSize, Description: "Bytes of messages kept for all sessions of the agent together (such as 64MiB); the least recently used sessions are forgotten first. Default 64MiB."}},
	}}

// agentCommonKeys are the keys of an agent in `agents:` and in an `agent:` step.
func agentCommonKeys() []Key {
	return []Key{
		{Name: "description", Shape: str("What the agent does; its MCP tool description.")},
		{Name: "type", Shape: Shape{Type: TypeString, What: "agent type", Enum: AgentTypes, Default: "react",
			Description: "The agent loop: react (reason, call tools, repeat until an answer)."}},
		{Name: "model", Shape: modelShape},
		{Name: "system_prompt", Shape: str("The system prompt: who the agent is and how it answers.")},
		{Name: "tools", Shape: Shape{Type: TypeList, Items: &agentToolShape,
			Description: "The tools the agent may call: ids of workflows, tools and agents, or MCP servers (type mcp)."}},
		{Name: "max_iterations", Shape: Shape{Type: TypeInt, Min: Bound(1), Description: "Most model calls of one run. Default: the runtime's."}},
		{Name: "timeout", Shape: Shape{Type: TypeDuration, Description: "Bound of one whole run. Default: the runtime's."}},
		{Name: "tool_timeout", Shape: Shape{Type: TypeDuration, Description: "Bound of each tool call. Default: the runtime's."}},
		{Name: "parallel_tool_calls", Shape: Shape{Type: TypeBool, Default: true,
			Description: "Run the tool calls of one model reply at the same time."}},
		{Name: "max_tool_calls_per_turn", Shape: Shape{Type: TypeInt, Min: Bound(1),
			Description: "Most tool calls of one model reply that run; the model is told the others were not run. Default 16."}},
		{Name: "max_parallel_tool_calls", Shape: Shape{Type: TypeInt, Min: Bound(1),
			Description: "Most tool calls of one model reply that run at the same time. Default 4."}},
		{Name: "max_tool_bytes", Shape: Shape{Type: TypeByteSize,
			Description: "Most bytes of a tool call's arguments and of its result (such as 1MiB); the model gets an error instead of an oversize call or result. Default 1MiB."}},
		{Name: "stream", Shape: Shape{Type: TypeBool, Description: "Stream the answer as it is written (where the trigger can)."}},
		{Name: "memory", Shape: agentMemoryShape},
	}
}

var (
	// fieldsShape is the shape of tool input/output fields, as decodeFields reads them.
	fieldsShape  = describeValue(func(d *Decoder, n *yaml.Node) { decodeFields(d, n, "", 0) })
	triggerShape = describeValue(func(d *Decoder, n *yaml.Node) { decodeTrigger(d, n, "") })

	agentShape = Shape{Type: TypeObject, What: "an agent", Keys: append([]Key{
		{Name: "id", Required: true, Shape: str("The agent's id, unique among workflows, tools, agents and pipelines; its MCP tool name.")},
		{Name: "trigger", Shape: withDesc(triggerShape, "The trigger URI (http-server://…, direct://…), or {uri: URI}. The agent is an MCP tool either way.")},
		{Name: "durable", Shape: Shape{Type: TypeBool, Description: "Checkpoint each model turn and tool result, so that a run cut off by a crash or a restart goes on where it was. Default false (helix.durable sets it for all)."}},
	}, agentCommonKeys()...)}

	agentStepShape = Shape{Type: TypeObject, What: "an agent step", Short: "ref", Keys: append(append([]Key{
		{Name: "ref", Shape: str("The id of an agents: entry to run; then no other key. Without ref the step defines its agent inline.")},
	}, agentCommonKeys()...),
		Key{Name: "output", Shape: withDesc(fieldsShape, "The fields of the JSON answer, like a tool's output: the agent must answer with an object that matches them. Default: the enclosing tool's output.")})}
)

// AgentShape returns the declared shape of an `agents:` entry. Callers must not
// modify the shapes it holds.
func AgentShape() Shape { return agentShape }

// AgentStepShape returns the declared shape of the value of an `agent:` step: the
// id of an `agents:` entry (short for {ref: id}), or an inline agent — the keys of
// an `agents:` entry except id and trigger, plus output. internal/step declares the step
// kind with it; [AgentFromStep] turns the decoded values into an [AgentConfig].
// Callers must not modify the shapes it holds.
func AgentStepShape() Shape { return agentStepShape }

func decodeAgent(d *Decoder, n *yaml.Node, p string) (AgentConfig, bool) {
	v := d.Decode(n, p, "an agent", &agentShape)
	if d.desc != nil || !isMapping(v.Node) {
		return AgentConfig{Pos: d.Pos(v.Node), Path: p, Node: v.Node}, false
	}
	a := agentFromValues(d, v)
	a.ID = v.String("id")
	a.Durable = v.Bool("durable")
	if tn := v.NodeOf("trigger"); tn != nil {
		a.Trigger, a.TriggerPos = decodeTrigger(d, tn, v.PathOf("trigger"))
		a.TriggerRaw = triggerRaw(d, tn)
	}
	if idn := v.NodeOf("id"); a.ID == "" && idn != nil && idn.Kind == yaml.ScalarNode && !IsNull(idn) {
		d.Errorf(v.NodeOf("id"), v.PathOf("id"), "an agent's id must not be empty")
	}
	return a, a.ID != ""
}

// DecodeAgentStep decodes the value of an `agent:` step at path (such as
// tools[1].steps[0].agent): a string is the id of an `agents:` entry (Ref), a
// mapping {ref: id} too, any other mapping an inline agent. Problems are recorded in
// d with their positions; ok is false when the value cannot make an agent.
func DecodeAgentStep(d *Decoder, n *yaml.Node, path string) (AgentConfig, bool) {
	return AgentFromStep(d, d.Decode(n, path, "an agent step", &agentStepShape))
}

// AgentFromStep is [DecodeAgentStep] for a value already decoded with
// [AgentStepShape] (a step kind declared with it gets v from internal/step): it checks
// what the shape cannot say and records problems in d.
func AgentFromStep(d *Decoder, v *Values) (AgentConfig, bool) {
	if d.desc != nil || v == nil {
		return AgentConfig{}, false
	}
	n := v.Node
	if n == nil || IsNull(n) {
		d.Errorf(n, v.Path, "an agent step needs the id of an agents: entry or an inline agent").Hint =
			"write agent: ID, or agent: {model: {provider: openai, model: gpt-4o}, system_prompt: …}"
		return AgentConfig{Pos: d.Pos(n), Path: v.Path, Node: n}, false
	}
	if v.Has("ref") {
		a := AgentConfig{Ref: v.String("ref"), Pos: d.Pos(n), Path: v.Path, Node: n}
		ok := strings.TrimSpace(a.Ref) != ""
		if rn := v.NodeOf("ref"); !ok && rn != nil && rn.Kind == yaml.ScalarNode {
			d.Errorf(v.NodeOf("ref"), v.PathOf("ref"), "ref must name an agents: entry")
		}
		for _, k := range agentStepShape.Keys {
			if k.Name != "ref" && v.Has(k.Name) {
				d.Errorf(v.NodeOf(k.Name), v.PathOf(k.Name), "%s cannot be set with ref: the step runs the agents: entry %q as declared", k.Name, a.Ref).Hint =
					"set it on the agents: entry, or drop ref and define the agent here"
				ok = false
			}
		}
		return a, ok
	}
	if !isMapping(n) {
		return AgentConfig{Pos: d.Pos(n), Path: v.Path, Node: n}, false
	}
	a := agentFromValues(d, v)
	if on := v.NodeOf("output"); on != nil {
		a.Output = decodeFields(d, on, v.PathOf("output"), 0)
	}
	if !v.Has("model") {
		d.Errorf(n, v.Path, "an inline agent needs model: {provider: …, model: …}").Hint =
			"or name an agents: entry: agent: ID"
		return a, false
	}
	return a, true
}

func isMapping(n *yaml.Node) bool { return n != nil && n.Kind == yaml.MappingNode }

// agentFromValues reads the keys agents: entries and inline agents share.
func agentFromValues(d *Decoder, v *Values) AgentConfig {
	a := AgentConfig{
		Description:  v.String("description"),
		Type:         v.String("type"),
		SystemPrompt: v.String("system_prompt"),
		Timeout:      v.Duration("timeout"),
		ToolTimeout:  v.Duration("tool_timeout"),
		Stream:       v.Bool("stream"),
		Path:         v.Path,
		Node:         v.Node,
		Pos:          d.Pos(v.Node),
	}
	if v.Has("parallel_tool_calls") {
		b := v.Bool("parallel_tool_calls")
		a.ParallelToolCalls = &b
	}
	a.MaxIterations = v.Int("max_iterations")
	a.MaxToolCallsPerTurn = v.Int("max_tool_calls_per_turn")
	a.MaxParallelToolCalls = v.Int("max_parallel_tool_calls")
	a.MaxToolBytes = v.ByteSize("max_tool_bytes")
	if m := v.Object("model"); m != nil {
		a.Model = modelFromValues(d, m)
	}
	if m := v.Object("memory"); m != nil {
		a.Memory = AgentMemoryConfig{
			Window:      m.Int("window"),
			MaxSessions: m.Int("max_sessions"),
			MaxBytes:    m.ByteSize("max_bytes"),
		}
	}
	for _, tv := range v.Objects("tools") {
		a.Tools = append(a.Tools, agentToolFromValues(d, tv))
	}
	return a
}

func modelFromValues(d *Decoder, v *Values) ModelConfig {
	m := ModelConfig{
		Provider: v.String("provider"),
		Model:    v.String("model"),
		APIKey:   v.String("api_key"),
		BaseURL:  v.String("base_url"),
		Headers:  stringMap(v.Pairs("headers")),
		Node:     v.Node,
		Pos:      d.Pos(v.Node),
	}
	if v.Has("model") && strings.TrimSpace(m.Model) == "" {
		d.Errorf(v.NodeOf("model"), v.PathOf("model"), "the model name must not be empty").Hint = "for example gpt-4o or claude-sonnet-4-20250514"
	}
	if m.BaseURL != "" {
		checkHTTPURL(d, v.NodeOf("base_url"), v.PathOf("base_url"), "base_url", m.BaseURL)
	}
	if v.Has("temperature") {
		t := v.Float("temperature")
		m.Temperature = &t
	}
	m.MaxTokens = v.Int("max_tokens")
	return m
}

// checkHTTPURL records an error when s is not an absolute http or https URL.
func checkHTTPURL(d *Decoder, n *yaml.Node, p, key, s string) bool {
	u, err := url.Parse(s)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return true
	}
	d.Errorf(n, p, "%s %q is not an http:// or https:// URL", key, s).Hint = "for example https://api.example.com/v1"
	return false
}

// stringMap collects the scalar values of pairs (a TypeMap of strings; the shape
// has reported the others).
func stringMap(pairs []Pair) map[string]string {
	if pairs == nil {
		return nil
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		if p.Value != nil && p.Value.Kind == yaml.ScalarNode && !IsNull(p.Value) {
			out[p.Key] = p.Value.Value
		}
	}
	return out
}

// stringList collects the strings of a list key (the shape has reported the rest).
func stringList(v *Values, key string) []string {
	val := v.Get(key)
	if val == nil {
		return nil
	}
	l, _ := val.V.([]any)
	out := make([]string, 0, len(l))
	for _, it := range l {
		if s, ok := it.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// mcpOnlyKeys are the keys of an agent tool that only type mcp takes.
var mcpOnlyKeys = []string{"mcp_server", "auth", "include", "exclude", "on_elicit", "on_sample"}

func agentToolFromValues(d *Decoder, v *Values) AgentToolConfig {
	t := AgentToolConfig{
		Name:        v.String("name"),
		Type:        v.String("type"),
		Description: v.String("description"),
		Path:        v.Path,
		Node:        v.Node,
		Pos:         d.Pos(v.Node),
	}
	if v.Has("name") && strings.TrimSpace(t.Name) == "" {
		d.Errorf(v.NodeOf("name"), v.PathOf("name"), "an agent tool's name must not be empty")
	}
	if t.Type == "" && v.Has("mcp_server") {
		t.Type = "mcp"
	}
	if t.Type != "mcp" {
		for _, k := range mcpOnlyKeys {
			if v.Has(k) {
				e := d.Errorf(v.NodeOf(k), v.PathOf(k), "%s is only for tools of type mcp", k)
				if t.Type == "" {
					e.Hint = "add mcp_server: {url: …} (or {command: …}) to reach an MCP server"
				} else {
					e.Hint = fmt.Sprintf("this tool has type %s; remove %s or set type: mcp", t.Type, k)
				}
			}
		}
	} else if !v.Has("mcp_server") {
		at := v.NodeOf("type")
		if at == nil {
			at = v.Node
		}
		d.Errorf(at, v.Path, "a tool of type mcp needs mcp_server").Hint =
			"add mcp_server: {url: https://…} or mcp_server: {command: …, args: […]}"
	}
	if ms := v.Object("mcp_server"); ms != nil && t.Type == "mcp" {
		t.MCPServer = mcpServerFromValues(d, ms)
	}
	if an := v.NodeOf("auth"); an != nil && t.Type == "mcp" {
		t.AuthPos = d.Pos(an)
		// The shape has reported this node's mistakes already; a quiet decoder
		// keeps them from being reported twice.
		quiet := NewDecoder(d.file)
		if m, ok := quiet.Value(an, v.PathOf("auth")).(map[string]any); ok {
			t.Auth = m
		}
	}
	t.Include = patterns(d, v, "include")
	t.Exclude = patterns(d, v, "exclude")
	t.OnElicit, t.OnSample = v.String("on_elicit"), v.String("on_sample")
	if n := v.NodeOf("on_sample"); n != nil {
		t.OnSamplePos = d.Pos(n)
	}
	return t
}

// patterns returns the tool-name patterns of key, recording the malformed ones.
func patterns(d *Decoder, v *Values, key string) []string {
	if !v.Has(key) {
		return nil
	}
	out := stringList(v, key)
	n := v.NodeOf(key)
	if n = d.Resolve(n); n == nil || n.Kind != yaml.SequenceNode {
		return out
	}
	for i, it := range n.Content {
		it = d.Resolve(it)
		if it == nil || it.Kind != yaml.ScalarNode {
			continue
		}
		if _, err := path.Match(it.Value, ""); err != nil {
			d.Errorf(it, IndexPath(v.PathOf(key), i), "%s pattern %q is malformed: %v", key, it.Value, err).Hint =
				"patterns use path.Match syntax: * (any run of characters), ? (one character), [a-z] (a class); close every [ and escape \\ with \\"
		}
	}
	return out
}

func mcpServerFromValues(d *Decoder, v *Values) *AgentMCPServerConfig {
	s := &AgentMCPServerConfig{
		URL:       v.String("url"),
		Transport: v.String("transport"),
		Command:   v.String("command"),
		Args:      stringList(v, "args"),
		Env:       stringMap(v.Pairs("env")),
		Timeout:   v.Duration("timeout"),
		Pos:       d.Pos(v.Node),
	}
	hasURL, hasCmd := strings.TrimSpace(s.URL) != "", strings.TrimSpace(s.Command) != ""
	switch {
	case hasURL && hasCmd:
		d.Errorf(v.NodeOf("command"), v.PathOf("command"), "mcp_server takes url or command, not both").Hint =
			"url reaches a running server (http, sse); command starts one (stdio)"
	case !hasURL && !hasCmd:
		d.Errorf(v.Node, v.Path, "mcp_server needs url (a running server, http or sse) or command (a program to start, stdio)")
	}
	if hasURL {
		checkHTTPURL(d, v.NodeOf("url"), v.PathOf("url"), "url", s.URL)
	}
	if s.Transport == "" {
		if hasCmd && !hasURL {
			s.Transport = "stdio"
		} else if hasURL {
			s.Transport = "http"
		}
	}
	tn, tp := v.NodeOf("transport"), v.PathOf("transport")
	switch {
	case s.Transport == "stdio" && !hasCmd && v.Has("transport"):
		d.Errorf(tn, tp, "transport stdio needs command").Hint = "add command: (the program to start) and args:, or use transport http with url"
	case (s.Transport == "http" || s.Transport == "sse") && !hasURL && hasCmd && v.Has("transport"):
		d.Errorf(tn, tp, "transport %s needs url", s.Transport).Hint = "add url: https://…, or use transport stdio with command"
	}
	if s.Transport != "stdio" {
		for _, k := range []string{"args", "env"} {
			if v.Has(k) && hasURL {
				d.Errorf(v.NodeOf(k), v.PathOf(k), "%s is only for a server started with command (stdio)", k)
			}
		}
	}
	return s
}
