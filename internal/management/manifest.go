package management

import (
	"net"
	"net/netip"
	"net/url"
)

// ManifestVersion is the manifest format version. Consumers (gateways doing
// auto-discovery) should refuse a manifest with a larger major version.
const ManifestVersion = 1

// Manifest describes what a running Helix exposes, served as
// GET /.well-known/helix-manifest.json (spec §16 auto-discovery). Its JSON
// form is specified by docs/manifest.schema.json.
type Manifest struct {
	// ManifestVersion is set to [ManifestVersion] when left zero.
	ManifestVersion int         `json:"manifest_version"`
	Name            string      `json:"name"`
	Version         string      `json:"version"`
	Agents          []Agent     `json:"agents"`
	Pipelines       []Pipeline  `json:"pipelines"`
	MCPServers      []MCPServer `json:"mcp_servers"`
	HTTPRoutes      []HTTPRoute `json:"http_routes"`
	// Durable is the durable store this instance runs durable work on; nil
	// (absent) when no workflow, tool or agent is durable.
	Durable *Durable `json:"durable,omitempty"`
}

// Durable describes the durable store and what runs on it. It never carries the
// store's URL or path.
type Durable struct {
	// Store is the store's kind: sqlite (one process) or postgres (replicas).
	Store string `json:"store"`
	// Executor is this replica's executor id: the owner of the runs it executes.
	Executor string `json:"executor,omitempty"`
	// Workflows are the ids of the durable workflows, tools and agents.
	Workflows []string `json:"workflows"`
}

// Agent is a registered AI agent. It never carries a key or another secret of
// the agent's configuration.
type Agent struct {
	ID   string `json:"id"`
	Type string `json:"type,omitempty"`
	// Provider is the model provider: openai or anthropic.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Tools are the ids of the workflows, tools and agents the agent calls and the
	// names of its MCP tool entries.
	Tools []string `json:"tools"`
	// Capabilities are tags such as tools, memory, streaming, structured_output.
	Capabilities []string `json:"capabilities"`
}

// Pipeline is a RAG pipeline: what it is made of and how far its ingest is. It
// never carries a key, a DSN or a path of the store.
type Pipeline struct {
	ID string `json:"id"`
	// Source is the pipeline's source (file://DIR), "" when only rag-ingest
	// steps feed it.
	Source   string `json:"source,omitempty"`
	Chunking string `json:"chunking"`
	// Embedder is the embedding provider (openai, onnx), "" without one.
	Embedder string `json:"embedder,omitempty"`
	Model    string `json:"model,omitempty"`
	Store    string `json:"store"`
	// Retrieval is the strategy queries use (hybrid falls back to keyword without
	// an embedder).
	Retrieval string         `json:"retrieval"`
	Output    string         `json:"output"`
	Ingest    PipelineIngest `json:"ingest"`
}

// PipelineIngest is the state of a pipeline's latest source ingest.
type PipelineIngest struct {
	Running   bool `json:"running"`
	Done      bool `json:"done"`
	Documents int  `json:"documents"`
	Ingested  int  `json:"ingested"`
	Skipped   int  `json:"skipped"`
	Deleted   int  `json:"deleted"`
	Errors    int  `json:"errors"`
}

// MCPServer is one configured MCP server.
type MCPServer struct {
	ID        string `json:"id"`
	Name      string `json:"name,omitempty"`
	Transport string `json:"transport"` // http | sse | stdio
	Addr      string `json:"addr,omitempty"`
	// Endpoints are full URLs clients connect to, e.g. http://127.0.0.1:3100/mcp
	// or http://127.0.0.1:3100/sse; empty for stdio.
	Endpoints []string `json:"endpoints"`
	// Tools are the MCP tool names the server lists (after filtering).
	Tools []string `json:"tools"`
	// Resources are the resources and resource templates the server lists
	// (`resources:` entries it exposes, after filtering; helix://workflows is not
	// repeated here), and Prompts its prompts.
	Resources []Resource `json:"resources"`
	Prompts   []Prompt   `json:"prompts"`
	// Gateway describes the upstreams the server fronts; nil without upstreams:.
	Gateway *Gateway `json:"gateway,omitempty"`
}

// Gateway is the gateway part of an MCP server: its upstreams, their state
// and what each serves, its audiences and how many policies govern it.
type Gateway struct {
	Upstreams []GatewayUpstream `json:"upstreams"`
	Audiences []string          `json:"audiences,omitempty"`
	Policies  int               `json:"policies"`
}

// GatewayUpstream is one upstream of a gateway.
type GatewayUpstream struct {
	ID        string `json:"id"`
	Transport string `json:"transport"`
	// Endpoint is the upstream's URL (credentials masked) or its command.
	Endpoint string `json:"endpoint"`
	// Reached says whether its tools were listed; Error is the last failure.
	Reached   bool   `json:"reached"`
	Error     string `json:"error,omitempty"`
	Tools     int    `json:"tools"`
	Prompts   int    `json:"prompts"`
	Resources int    `json:"resources"`
}

// Resource is one resource (URI) or resource template (URITemplate) of an MCP
// server.
type Resource struct {
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uri_template,omitempty"`
	Name        string `json:"name"`
	MIMEType    string `json:"mime_type,omitempty"`
}

// Prompt is one prompt of an MCP server, with the names of its arguments.
type Prompt struct {
	Name      string           `json:"name"`
	Arguments []PromptArgument `json:"arguments"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name     string `json:"name"`
	Required bool   `json:"required,omitempty"`
}

// HTTPRoute is a workflow triggered over HTTP (http-server:// consumers).
type HTTPRoute struct {
	Workflow string `json:"workflow"`
	// Method is the one HTTP method the route accepts, or "*" for any.
	Method string `json:"method,omitempty"`
	URI    string `json:"uri"`
}

// normalized returns m with nil lists replaced by empty ones, so consumers
// always get arrays (never null), and the format version filled in.
func (m Manifest) normalized() Manifest {
	if m.ManifestVersion == 0 {
		m.ManifestVersion = ManifestVersion
	}
	m.Agents = nonNil(m.Agents)
	for i := range m.Agents {
		m.Agents[i].Tools = nonNil(m.Agents[i].Tools)
		m.Agents[i].Capabilities = nonNil(m.Agents[i].Capabilities)
	}
	m.Pipelines = nonNil(m.Pipelines)
	m.MCPServers = nonNil(m.MCPServers)
	for i := range m.MCPServers {
		m.MCPServers[i].Endpoints = nonNil(m.MCPServers[i].Endpoints)
		m.MCPServers[i].Tools = nonNil(m.MCPServers[i].Tools)
		m.MCPServers[i].Resources = nonNil(m.MCPServers[i].Resources)
		m.MCPServers[i].Prompts = nonNil(m.MCPServers[i].Prompts)
		for j := range m.MCPServers[i].Prompts {
			m.MCPServers[i].Prompts[j].Arguments = nonNil(m.MCPServers[i].Prompts[j].Arguments)
		}
	}
	m.HTTPRoutes = nonNil(m.HTTPRoutes)
	if m.Durable != nil {
		d := *m.Durable
		d.Workflows = nonNil(d.Workflows)
		m.Durable = &d
	}
	return m
}

// nonNil copies s (so the caller's slices are never written) or returns an
// empty slice for nil.
func nonNil[T any](s []T) []T {
	return append(make([]T, 0, len(s)), s...)
}

// reachableEndpoints rewrites endpoints of servers listening on every interface
// (http://0.0.0.0:3100/mcp, http://[::]:3100/mcp), which no client can connect
// to, with the host name the manifest was requested by: a consumer that reached
// the management server that way reaches the MCP servers of the same host the
// same way. Must run on a normalized manifest (its slices are copies).
func (m *Manifest) reachableEndpoints(requestHost string) {
	host := requestHost
	if h, _, err := net.SplitHostPort(requestHost); err == nil {
		host = h
	}
	if host == "" {
		return
	}
	for i := range m.MCPServers {
		for j, e := range m.MCPServers[i].Endpoints {
			u, err := url.Parse(e)
			if err != nil {
				continue
			}
			a, err := netip.ParseAddr(u.Hostname())
			if err != nil || !a.IsUnspecified() {
				continue
			}
			u.Host = net.JoinHostPort(host, u.Port())
			m.MCPServers[i].Endpoints[j] = u.String()
		}
	}
}
