// Package agent is Helix's LLM agent runtime: a ReAct loop (model turn → tool calls
// → tool results → model turn …) written on a provider-neutral [Model], with
// providers on the vendors' official SDKs in internal/agent/openai (Chat Completions;
// base_url makes any OpenAI-compatible server work) and internal/agent/anthropic
// (Messages with tool use). Tools come from the tool catalogue (a *tool.Set).
//
// An [Agent] is built once ([New]) and runs many times concurrently ([Agent.Run]).
// A run has a whole-run timeout and a per-tool-call timeout, stops at
// MaxIterations with an error naming the limit, runs the tool calls of one turn
// concurrently (results in the model's order), turns tool failures, unknown tools
// and invalid arguments into tool results the model sees, stops when the same
// failure repeats, retries 429/5xx with backoff honouring Retry-After, keeps a
// bounded, LRU-evicted conversation memory per session id, validates an optional
// output schema (one repair attempt), and reports each iteration through the
// context's report.Reporter. With Config.Stream the providers use their streaming
// APIs and the answer's text goes out as progress messages while it is written
// (an MCP caller with a progress token sees it).
//
// The YAML wiring (`agents:`, the `agent:` step, `agent://`, agents as MCP tools)
// is internal/agent/setup (configuration → running agent) and pkg/app; the tools of
// external MCP servers come through internal/agent/mcptools.
//
// internal/agent/agenttest has fake servers speaking each provider's wire format,
// streams included, scripted or answering with a function of the request, for
// tests.
package agent
