// A TypeScript SDK client (@modelcontextprotocol/sdk) that runs every operation
// a client has against server-everything (or the tests' go-sdk server) and
// prints what it saw as one JSON object, operation → outcome, for the Go test
// to compare straight to the upstream and through the gateway.
//
//   node ts-client.mjs SDK_ESM_DIR PREFIX http URL
//   node ts-client.mjs SDK_ESM_DIR PREFIX stdio COMMAND ARGS...
const [sdkDir, prefix, kind, ...target] = process.argv.slice(2);
const { Client } = await import(`${sdkDir}/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdkDir}/client/streamableHttp.js`);
const { StdioClientTransport } = await import(`${sdkDir}/client/stdio.js`);
const types = await import(`${sdkDir}/types.js`);

const seen = { logs: 0, updated: [], samples: 0, elicits: 0, roots: 0 };
const client = new Client(
  { name: "interop-ts", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } } },
);
client.setRequestHandler(types.CreateMessageRequestSchema, async () => {
  seen.samples++;
  return { role: "assistant", model: "interop-model", content: { type: "text", text: "sampled answer" } };
});
client.setRequestHandler(types.ElicitRequestSchema, async () => {
  seen.elicits++;
  return { action: "accept", content: { name: "Ada Lovelace" } };
});
client.setRequestHandler(types.ListRootsRequestSchema, async () => {
  seen.roots++;
  return { roots: [{ name: "interop", uri: "file:///srv/interop" }] };
});
client.setNotificationHandler(types.LoggingMessageNotificationSchema, () => { seen.logs++; });
client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (n) => { seen.updated.push(n.params.uri); });

const transport = kind === "stdio"
  ? new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: "ignore" })
  : new StreamableHTTPClientTransport(new URL(target[0]));
await client.connect(transport);

const out = {};
async function op(name, f) {
  try {
    out[name] = await f();
  } catch (e) {
    out[name] = { error: String(e.message ?? e) };
  }
}
const call = (tool, args = {}, opts) => client.callTool({ name: prefix + tool, arguments: args }, undefined, opts);
const until = async (what, cond) => {
  for (let i = 0; i < 3000 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!cond()) throw new Error(`no ${what}`);
  return true;
};

await op("ping", () => client.ping());
await op("tools/list", async () => {
  const { tools } = await client.listTools();
  return Object.fromEntries(tools.map((t) => [t.name, t.inputSchema]));
});
await op("tools/call text", () => call("echo", { message: "hello gateway" }));
await op("tools/call image", () => call("get-tiny-image"));
await op("tools/call structured", () => call("get-structured-content", { location: "New York" }));
await op("tools/call error", () => call("get-sum", { a: "one", b: 2 }));
await op("progress", async () => {
  const progress = [];
  const result = await call("trigger-long-running-operation", { duration: 0.6, steps: 3 }, {
    onprogress: (p) => progress.push(p.progress),
  });
  // The last step's notification races the result (a client may drop a
  // notification that comes after the result); the earlier ones may not.
  const ascending = progress.every((p, i) => p === i + 1);
  return { result, progress: ascending && progress.length >= 2 ? "steps 1, 2 … in order" : progress };
});
await op("sampling", () => call("trigger-sampling-request", { prompt: "hello", maxTokens: 5 }));
await op("elicitation", () => call("trigger-elicitation-request"));
await op("roots", () => call("get-roots-list"));
await op("logging", async () => {
  await client.setLoggingLevel("debug");
  await call("toggle-simulated-logging");
  await until("log message", () => seen.logs > 0);
  await call("toggle-simulated-logging");
  return "received";
});
await op("resources/list", () => client.listResources());
await op("resources/templates/list", () => client.listResourceTemplates());
await op("resources/read", async () => {
  const r = await client.readResource({ uri: "demo://resource/dynamic/text/1" });
  // server-everything writes the time it made the text; keep the rest.
  return r.contents.map((c) => ({ uri: c.uri, mimeType: c.mimeType, text: c.text.replace(/ created at .*$/, "") }));
});
await op("resources/subscribe", async () => {
  const uri = "demo://resource/dynamic/text/1";
  await client.subscribeResource({ uri });
  await call("toggle-subscriber-updates");
  await until("resource update", () => seen.updated.includes(uri));
  await call("toggle-subscriber-updates");
  await client.unsubscribeResource({ uri });
  return "updated";
});
await op("prompts/list", async () => (await client.listPrompts()).prompts.map((p) => p.name));
await op("prompts/get simple", () => client.getPrompt({ name: prefix + "simple-prompt" }));
await op("prompts/get args", () => client.getPrompt({ name: prefix + "args-prompt", arguments: { city: "Paris" } }));
await op("completion/complete", () => client.complete({
  ref: { type: "ref/prompt", name: prefix + "completable-prompt" },
  argument: { name: "department", value: "E" },
}));
await op("cancel", async () => {
  const abort = new AbortController();
  const pending = call("trigger-long-running-operation", { duration: 60, steps: 60 }, {
    signal: abort.signal,
    onprogress: () => abort.abort("enough"),
  });
  try {
    await pending;
    return "not cancelled";
  } catch (e) {
    return abort.signal.aborted ? "aborted" : `failed: ${e.message}`;
  }
});
await op("ping after cancel", () => client.ping());
out.requests = { samples: seen.samples, elicits: seen.elicits };

process.stdout.write(JSON.stringify(out) + "\n");
await client.close();
