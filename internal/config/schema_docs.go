package config

// settingDocs are the descriptions the JSON Schema of the file shows for settings
// (editors show them on hover), keyed by the `what` of the mapping that holds the
// key and the key: "helix.shutdown_timeout", "a workflow.trigger". The keys, types
// and alternatives come from the decoders (describe mode); only these sentences are
// written here, and TestSettingDocsNameRealKeys fails when one names a key the
// decoders no longer have. A decoder may instead call [Decoder.Doc] on the value.
var settingDocs = map[string]string{
	"the configuration.helix":     "Settings of this Helix: name, log level, MCP servers, management, limits.",
	"the configuration.workflows": "Workflows: a trigger URI and the steps run for each exchange. Each is also an MCP tool.",
	"the configuration.tools":     "Tools: workflows with a declared input and output schema, triggered as tool://id and offered to MCP clients.",
	"the configuration.agents":    "LLM agents: a model, a system prompt and tools (workflows, tools, other agents, MCP servers) in a ReAct loop; each is also an MCP tool.",
	"the configuration.tests":     "Unit tests of workflows, run by helix test: an input, mocked targets and the expected reply.",
	"the configuration.pipelines": "RAG pipelines: documents from a source (file://) or rag-ingest steps are chunked, embedded and stored; queries retrieve the best chunks. Each is also an MCP tool and pipeline://id.",
	"the configuration.mcps":      "MCP servers, each exposing workflows and tools (the same model as helix.mcp.servers; id is required).",

	"helix.name":                   "The name of this Helix (manifest, logs).",
	"helix.starlang_max_memory":    "Allocation budget of one Starlang evaluation: 64MiB, 128MB or a number of bytes. Default 64MiB.",
	"helix.shutdown_timeout":       "How long stopping waits for in-flight exchanges and tool calls to finish. Default 30s.",
	"helix.management":             "The management server: manifest, health and metrics.",
	"helix.durable":                "Make every workflow, tool and agent durable (durable: true on each). Default false.",
	"helix.durable_store":          "The PostgreSQL URL (postgres://user:password@host/db) of the store of durable runs that replicas share; write the password as ${env:…}. Default: the embedded store <helix.data_dir>/durable.db, for one process.",
	"helix.replica_id":             "Which replica this is: a restarted replica recovers the durable runs it had. Unique per replica and stable across its restarts. Default the host name.",
	"helix.durable_max_checkpoint": "Largest checkpoint of one durable step (the exchange after it): 4MiB, 1MB or a number of bytes; a larger one fails the run saying so. Default 4MiB.",
	"helix.mcp":                    "MCP settings.",
	"helix.mcp.servers":            "MCP servers, each exposing workflows and tools.",
	"helix.mcp.replay_budget":      "Event data the resumable streams of all MCP sessions may keep for replay (each session at most 1MiB of it): 64MiB, 16MB or a number of bytes. Default 64MiB.",

	"helix.management.addr":     "Address of the manifest, health and metrics endpoints. Default 127.0.0.1:9999.",
	"helix.management.enabled":  "Run the management server. Default true.",
	"helix.management.required": "Fail to start when the management address is taken, instead of warning and running on.",

	"a workflow.id":            "The workflow's id, unique among workflows, tools, agents and pipelines; its MCP tool name.",
	"a workflow.description":   "What the workflow does; the MCP tool description.",
	"a workflow.trigger":       "The trigger URI (direct://x, http-server://…, timer://…), or {uri: URI}. Without one the workflow never runs.",
	"a workflow.from":          "Camel's name for trigger.",
	"a workflow.steps":         "The steps run for each exchange, in order.",
	"a workflow.error_handler": "What happens when a step fails: redelivery and a dead letter channel.",
	"a workflow.durable":       "Checkpoint each step's result before the next step starts, so that a run cut off by a crash or a restart goes on from its last checkpoint. Default false.",

	"a workflow.on_error":           "How the workflow's failures are answered to an HTTP caller (http-server:// trigger).",
	"on_error.status":               "The HTTP status (400-599) of every failure, or one per failure class: {conflict: 422, timeout: 503}.",
	"on_error.status.bad_request":   "Status of failures that reject the request (default 400).",
	"on_error.status.conflict":      "Status of failures that clash with existing data, such as a unique violation in postgres:// (default 409).",
	"on_error.status.invalid_input": "Status of input that a schema or the database rejects (default 422).",
	"on_error.status.timeout":       "Status of failures because a deadline passed (default 504).",
	"on_error.status.fault":         "Status of every other failure (default 500).",

	"a tool.id":          "The tool's id and MCP tool name, triggered as tool://id.",
	"a tool.description": "What the tool does; the MCP tool description (required, not empty).",
	"a tool.input":       "The input fields, name → type or {type, description, required, default, enum, items, properties}.",
	"a tool.output":      "The output fields, advertised as the tool's outputSchema.",
	"a tool.steps":       "The steps run for each call.",
	"a tool.durable":     "Checkpoint each step's result before the next step starts, so that a call cut off by a crash or a restart goes on from its last checkpoint. Default false.",

	"a field.type":        "string, integer, number, boolean, array or object.",
	"a field.description": "What the field means, for the assistant.",
	"a field.required":    "The caller must give the field.",
	"a field.default":     "The value used when the caller leaves the field out.",
	"a field.enum":        "The values the field may take.",
	"a field.items":       "The type of the elements of an array field.",
	"a field.properties":  "The fields of an object field.",

	"a tool override.description":  "Replaces the workflow's MCP tool description.",
	"a tool override.input_schema": "Replaces the tool's input schema, advertised as written and enforced on each call: a JSON Schema object as a mapping, or as JSON text.",
	"a tool override.task":         "Whether the server runs the tool as an MCP task: optional (the default of a durable workflow: clients that declare the tasks extension get a task), required (only as a task; the workflow must be durable) or forbidden (never).",

	"admission.max_running":   "Requests of the whole server running at once (Streamable HTTP, its fast path and SSE): a fixed number, or auto: a limit that adapts to what the server can do (it shrinks while calls run slower than usual because of the calls it runs, and grows while requests wait and calls run at their usual speed). Required.",
	"admission.queue":         "Requests waiting for a slot, first come first served; beyond, refused at once. 0 the default (max_running; with auto, the limit of the moment), -1 none.",
	"admission.queue_timeout": "The longest a request waits for a slot before it is refused. Default 50ms; with max_running: auto, at most twice the usual time of a call (at least 1ms).",
	"request_state.key":       "The AES-256 key sealing the requestState of MCP 2026-07-28 input-required results: 32 bytes as base64 or 64 hex digits, written as ${env:NAME}. Replicas need the same; unset, each process makes a random one.",
	"request_state.ttl":       "How long a requestState can be used. Default 10m.",
	"request_state.store":     "redis://[user:password@]host[:port][/db] (rediss:// for TLS): where replicas remember used requestStates, so that a replayed one is refused everywhere; unset, each process remembers its own.",

	"auth.issuer":       "OAuth 2.1: the token issuer; tokens from others are refused.",
	"auth.audience":     "The audience tokens must carry; default the resource URL.",
	"auth.jwks_url":     "Where the issuer's signing keys are fetched; default from the issuer's metadata.",
	"auth.resource_url": "This server's public MCP URL, announced in the protected-resource metadata.",
	"auth.scopes":       "Tool name (or *) → the scopes a token needs to call it.",
	"auth.roles_claim":  "The token claim listing the caller's roles, which gateway policies match; default roles.",
	"api_key.key":       "The key; write it as ${env:NAME}.",
	"api_key.name":      "Who the key stands for: the principal name gateway policies match.",
	"api_key.roles":     "The roles of the key's principal, which gateway policies match.",
}

// mcpServerDocs describe the keys of an MCP server entry, in helix.mcp.servers and
// mcps alike (one decoder, one model).
var mcpServerDocs = map[string]string{
	"id":                         "The server's id (required in mcps).",
	"enabled":                    "Run this server (helix.mcp.servers).",
	"addr":                       "Listen address host:port (HTTP and SSE transports).",
	"name":                       "The server name announced to MCP clients.",
	"version":                    "The server version announced to MCP clients.",
	"expose":                     "The ids of the workflows and tools offered as MCP tools; all when left out, none when [].",
	"workflows":                  "Former name of expose in helix.mcp.servers; [] means all.",
	"stateless":                  "Serve Streamable HTTP without sessions, so that any replica answers any request.",
	"session_idle_timeout":       "Close sessions idle this long.",
	"fast_tool_calls":            "Answer tools/call on Helix's fast path (helix transport). Default true.",
	"tools":                      "Workflow id → replacement description and input_schema of its tool.",
	"max_sessions":               "Open sessions at most; the one idle longest is closed. 0 the default (10000), -1 no limit.",
	"max_sessions_per_principal": "Open sessions of one client (API key, token subject or address) at most. 0 the default (1000), -1 no limit.",
	"max_concurrent_calls":       "Requests of one session (Streamable HTTP) running at once; more, in a batch or parallel POSTs, wait. 0 the default (64), -1 no limit.",
	"api_keys":                   "Accepted API keys (Authorization: Bearer or X-API-Key); write them as ${env:NAME}, or as {key, name, roles} to name the caller.",
	"trusted_proxies":            "Addresses (CIDR) whose requests skip the API key check and whose X-Forwarded-For is believed; their connections are not capped by max_connections_per_ip.",
	"proxy_protocol":             "Read a PROXY protocol header (HAProxy send-proxy, nginx proxy_protocol) from trusted_proxies: the client it names is capped per address, rate-limited and logged. Default false.",
	"rate_limit":                 "Requests per minute per client; 0 unlimited.",
	"rate_limit_store":           "redis://[user:password@]host[:port][/db] (rediss:// for TLS): replicas with the same store and server id share each client's bucket; unset, each process limits alone.",
	"rate_limit_store_fallback":  "While rate_limit_store cannot answer (within 250ms): local (default) decides with this process's own buckets, refuse answers 503.",
	"auth_failure_limit":         "Failed authentications per client address within auth_failure_window before 429. 0 the default (10), -1 no limit.",
	"auth_failure_window":        "The window of auth_failure_limit. Default 1m.",
	"max_body_bytes":             "Largest request body. 0 the default (4 MiB), -1 no limit.",
	"cors_origins":               "Browser origins allowed to call the server.",
	"allowed_tools":              "Only these tools may be called (blocked_tools wins).",
	"blocked_tools":              "These tools may not be called.",
	"auth":                       "OAuth 2.1 resource server: bearer JWTs validated against the issuer.",
	"admission":                  "Admission control of the whole server: at most max_running requests run at once, queue more wait at most queue_timeout, the rest get 503 + Retry-After and the JSON-RPC error -32030 (server busy). Pings, initialize, notifications and cancellations are never refused. Unset: none.",
	"request_state":              "The sealed requestState of MCP 2026-07-28 input-required results (elicit, sample and roots steps): key, ttl, store.",
}

// listenerDocs describe the connection limits of every HTTP listener.
var listenerDocs = map[string]string{
	"read_timeout":           "Time to receive a request (headers and body). Default 30s; off for none.",
	"idle_timeout":           "A keep-alive connection without a request is closed after this. Default 120s; off for none.",
	"write_timeout":          "Time to send a response once it starts (streams: per event). Default 60s; off for none.",
	"max_connections":        "Open connections on the listener. Default 4096; off for no limit.",
	"max_connections_per_ip": "Open connections from one client address (IPv6: per /64). Default 256; off for no limit.",
}

func init() {
	for k, v := range mcpServerDocs {
		settingDocs["an MCP server."+k] = v
		if k != "enabled" && k != "workflows" { // helix.mcp.servers only
			settingDocs["an mcps entry."+k] = v
		}
	}
	for _, what := range []string{"an MCP server", "an mcps entry", "helix.management"} {
		for k, v := range listenerDocs {
			settingDocs[what+"."+k] = v
		}
	}
}
