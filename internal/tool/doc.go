// Package tool is Helix's tool catalogue: what an application offers to callers
// that are not workflows — MCP clients through an MCP server, and agents.
//
// A [Tool] is a name, title, description, input and output schema, annotations and
// an invoke function (context, arguments) → [Result] with content parts (text,
// image, audio, embedded resource, resource link) and a structured value. A
// workflow's reply becomes a Result by [ReplyResult]: text and JSON as text, bytes
// by their Content-Type, content values (Starlang's content module) as themselves. Workflows with a trigger and
// `tools:` entries register into a [Catalogue] ([Catalogue.AddWorkflows]; pkg/app
// builds the application's catalogue); agents and pipelines are engine workflows of
// their own kind and register the same way. An MCP server
// serves a [Set] selected from it ([Catalogue.Select]): names unique, ids usable as
// aliases.
//
// What every caller needs happens once, in [Tool.Call]: decoding the arguments
// (integral numbers as int64), validating them ([CompileInput]: JSON Schema with
// defaults), invoking the tool with panics recovered, and shaping the result
// (structured results checked against the output schema and mirrored as text), with
// messages safe to show a caller (exchange.ClientMessage) and the full error kept
// for the log. Tool names follow one rule ([SanitizeName], [CheckName]).
//
// The package knows nothing of MCP's wire protocol (only the JSON form of Content
// and Result borrows MCP's shape, the common one for content parts); the MCP server
// (internal/component/mcp/server) maps Results to MCP's, and keeps what is MCP's own:
// refusing tools a caller may not see, the shutdown refusal, statistics.
package tool
