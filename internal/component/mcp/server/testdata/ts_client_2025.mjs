// The TypeScript SDK's client (protocol 2025-11-25) calls Helix's signup (elicit)
// and summarize (sample) tools and prints one JSON line: the protocol version the
// server answered initialize with, the two tool results, what its handlers were
// asked, the methods it sent, and what it received (server-to-client requests,
// input_required results).
//
//   node ts_client_2025.mjs <sdk dist/esm URL> <target> [args…]
//
// target is a Streamable HTTP URL (http://…/mcp), sse+<SSE URL> or a command to
// run over stdio with args. Run by TestTypeScriptClientOn20251125.
const [esm, target, ...args] = process.argv.slice(2);
const { Client } = await import(`${esm}/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${esm}/client/streamableHttp.js`);
const { SSEClientTransport } = await import(`${esm}/client/sse.js`);
const { StdioClientTransport } = await import(`${esm}/client/stdio.js`);
const { ElicitRequestSchema, CreateMessageRequestSchema } = await import(`${esm}/types.js`);

const client = new Client(
  { name: "helix-ts-test", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} }, sampling: {} } },
);
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params.message);
  return { action: "accept", content: { username: "Ada" } };
});
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  asked.push(req.params.messages[0]?.content?.text ?? "");
  return { role: "assistant", content: { type: "text", text: "short" }, model: "m1", stopReason: "endTurn" };
});

const transport = target.startsWith("http")
  ? new StreamableHTTPClientTransport(new URL(target))
  : target.startsWith("sse+")
  ? new SSEClientTransport(new URL(target.slice(4)))
  : new StdioClientTransport({ command: target, args, stderr: "inherit" });

// Record every message the client receives (Client.connect sets onmessage before
// it starts the transport, so the wrapper sees the initialize result too) and the
// method of every message it sends.
const received = [];
const sent = [];
const send = transport.send.bind(transport);
transport.send = (msg, opts) => {
  if (msg.method) sent.push(msg.method);
  return send(msg, opts);
};
const start = transport.start.bind(transport);
transport.start = async () => {
  const deliver = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    received.push(msg);
    deliver(msg, extra);
  };
  return start();
};

await client.connect(transport);
const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const signup = await client.callTool({ name: "signup", arguments: { who: "Bob" } });
const summarize = await client.callTool({ name: "summarize", arguments: { doc: "the report" } });
console.log(JSON.stringify({
  protocolVersion: received.find((m) => m.result?.protocolVersion)?.result.protocolVersion ?? "",
  signup: text(signup),
  signupError: signup.isError === true,
  summarize: text(summarize),
  summarizeError: summarize.isError === true,
  asked,
  sent,
  serverRequests: received.filter((m) => m.method && m.id !== undefined).map((m) => m.method),
  inputRequired: received.filter((m) => m.result?.resultType === "input_required").length,
}));
await client.close();
