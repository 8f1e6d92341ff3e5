// Package starlang implements Starlang, the Starlark dialect that Helix YAML steps
// (transform, set-body, set-header, process, enrich, choice …) are scripted in.
//
// Starlang is go.starlark.net with these differences:
//
//   - `++` concatenates strings and lists; it is rewritten to Starlark's `+` outside
//     string literals and comments before parsing (see rewriteConcat for the exact
//     rule; `a + +b` keeps its Starlark meaning).
//   - if, for and while are allowed at top level, as are sets, recursion and
//     reassignment of globals.
//   - The value of a script is the value of its last statement when that statement
//     is an expression: `{"query": payload}` on its own is a complete script.
//   - Top-level code reads names in order, as a Python module does: before the script
//     assigns a name, it reads the predeclared value or exchange variable of that name,
//     so `payload = payload["data"]` and `count = count + 1` work. A predeclared name
//     the script assigns only in some branch keeps its predeclared value otherwise.
//   - load statements are rejected.
//
// Predeclared names, fresh for every evaluation:
//
//	payload, body   the in-message body (the same object): JSON text is decoded when the
//	                Content-Type header says JSON; other text stays a string. Mutations
//	                (payload["total"] = 1) are visible in [Result.Payload].
//	headers         dict of the in-message headers (a copy; changing it changes nothing)
//	                whose lookups ignore case: headers.get("dataType"), headers["x-id"]
//	                and "X-ID" in headers find headers sent as DataType and X-Id
//	header(name)    a header's value or None (exact name first, then any case)
//	variables       dict of the exchange variables; each variable is also predeclared
//	                under its own name unless a builtin already has that name
//	response_code   the HelixHttpResponseCode header as an int, or None
//	write(value, content_type="application/json")
//	                sets the exchange body and Content-Type; returns None
//	fail(msg)       stops the script with a *[FailError] whose message is msg
//	sizeOf(x)       len(x), and 0 for None
//	sum(xs, start=0) sum of ints and floats
//	progress(current, total=None, message=None)
//	                reports progress to the caller through the context's reporter
//	                (package report); an MCP client receives notifications/progress
//	log(level, message)
//	                reports a message to the caller the same way (notifications/message);
//	                level is debug, info, notice, warning (warn), error, critical, alert
//	                or emergency. Both do nothing when nobody listens.
//	json, time, math the go.starlark.net/lib modules
//	content         tool answers beyond text and JSON: content.text(s),
//	                content.image(data, mime_type), content.audio(data, mime_type),
//	                content.resource(uri, text=…|blob=…, mime_type=None),
//	                content.resource_link(uri, name, description=None, mime_type=None),
//	                content.result(content=None, structured=None, is_error=False);
//	                data and blob are bytes or a str holding base64 (content.go)
//
// plus every standard Starlark builtin (str, int, float, len, enumerate, sorted …).
// Any other name the script reads without having assigned it (see
// [Script.Variables]) must be an exchange variable at evaluation time, set by an
// earlier enrich step; otherwise [Script.Eval] reports it as undefined, even when it
// appears only in a branch that would not run, as Starlark does for undefined names.
//
// A [Script] is compiled once, when the YAML is loaded, and evaluated many times,
// concurrently, each evaluation on its own starlark.Thread with a step limit and
// cancelled with the caller's context. Errors carry positions in the YAML file:
// "helix.yaml:14:13: …"; [Error.ClientMessage] and [FailError.ClientMessage] are the
// same without them, for whoever sent the exchange.
//
// Because scripts run on callers' data, one evaluation is bounded in every resource
// a caller could inflate (see limits.go): nesting of values, including JSON given to
// json.decode ([DefaultMaxNesting]); an allocation budget ([Options.MaxMemory],
// helix.starlang_max_memory), charged by the operations that can allocate in
// proportion to their operands, which Compile routes through guard builtins; call
// depth ([Options.MaxCallDepth]); integer size ([MaxIntBits]); and ranges longer
// than the step limit.
package starlang
