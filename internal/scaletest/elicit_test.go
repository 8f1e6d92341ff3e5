package scaletest_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// elicitReplicaYAML is the configuration of the input-required replicas: one
// stateless MCP server behind API keys, whose requestState is sealed with a key
// and remembered as used in a Redis that every replica shares. Its tool "ship"
// does work before its question (reserve) and after it (ship), each at the test's
// work service, naming the replica and the call's token, so that the test sees
// which process ran what. The retry resumes at the question with the exchange
// sealed into the state (its headers too): X-Replica is set again after the
// question, to name the replica that runs the rest.
//
// %[1]s is the work service's URL. The environment gives the rest, so that one
// file serves replicas with another key or store.
const elicitReplicaYAML = `helix:
  name: scale-elicit
  management:
    addr: ${env:HELIX_TEST_MGMT}
mcps:
  - id: tools
    addr: 127.0.0.1:${env:HELIX_TEST_MCP}
    stateless: true
    api_keys: ["${env:HELIX_TEST_KEY_A}", "${env:HELIX_TEST_KEY_B}"]
    request_state:
      key: ${env:HELIX_TEST_STATE_KEY}
      store: ${env:HELIX_TEST_STATE_STORE}
workflows:
  - id: ship
    description: Reserves a slot, asks the user where to ship, ships
    trigger: direct://ship
    steps:
      - set-header: {name: X-Token, starlang: 'payload["token"]'}
      - set-header: {name: X-Replica, constant: "${env:HELIX_TEST_REPLICA}"}
      - to: %[1]s/reserve
      # The accepted answer, {"street": …}, becomes the body ship is sent.
      - elicit:
          message: "Where should parcel ${header.X-Token} go?"
          schema:
            properties:
              street: {type: string, minLength: 3}
            required: [street]
      - set-header: {name: X-Replica, constant: "${env:HELIX_TEST_REPLICA}"}
      - to: %[1]s/ship
  - id: confirm
    description: Asks for a confirmation, then reports it
    trigger: direct://confirm
    steps:
      - elicit: "Confirm?"
      - set-body: {constant: "confirmed on ${env:HELIX_TEST_REPLICA}"}
`

// stepLog is the work service of the input-required test: it records which
// replica ran which step of which call (token) and answers
// {"token", "step", "replica"} plus the street it was sent, if any. Safe for
// concurrent use.
type stepLog struct {
	*httptest.Server
	mu  sync.Mutex
	ran map[string][]string // "token/step" → replicas, in order
}

func newStepLog(t *testing.T) *stepLog {
	s := &stepLog{ran: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *stepLog) serve(w http.ResponseWriter, r *http.Request) {
	token, replica, step := r.Header.Get("X-Token"), r.Header.Get("X-Replica"), strings.TrimPrefix(r.URL.Path, "/")
	if token == "" || replica == "" {
		http.Error(w, "want the headers X-Token and X-Replica", http.StatusBadRequest)
		return
	}
	var in struct {
		Street string `json:"street"`
	}
	_ = json.NewDecoder(r.Body).Decode(&in) // only /ship has a body of its own
	s.mu.Lock()
	s.ran[token+"/"+step] = append(s.ran[token+"/"+step], replica)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"token": token, "step": step, "replica": replica, "street": in.Street})
}

// ranBy returns the replicas that ran step for token, in order.
func (s *stepLog) ranBy(token, step string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ran[token+"/"+step])
}

// stateKey is a fresh AES-256 key as request_state.key takes it.
func stateKey(t *testing.T) string {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(key)
}

// newEraClient speaks MCP 2026-07-28 to one URL with raw JSON-RPC over HTTP: no
// session, the version and the client's capabilities (elicitation) in every
// request's _meta. The test makes every retry itself.
type newEraClient struct {
	url, apiKey string
	hc          *http.Client
}

// rpcReply is a JSON-RPC response as the test reads it.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
	status int
}

// call sends tools/call with params (Name, Arguments, and on a retry
// InputResponses and RequestState); the test's 2026-07-28 _meta is added.
func (c *newEraClient) call(t *testing.T, params sdk.CallToolParams) rpcReply {
	t.Helper()
	params.Meta = sdk.Meta{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "scaletest", "version": "1"},
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": &params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", params.Name)
	req.Header.Set("X-API-Key", c.apiKey)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", params.Name, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("tools/call %s: reading the answer: %v", params.Name, err)
	}
	reply := rpcReply{status: resp.StatusCode}
	// One call, and the client accepts JSON: the answer is a JSON body.
	if err := json.Unmarshal(raw, &reply); err != nil {
		t.Fatalf("tools/call %s: status %d, not a JSON-RPC response: %v\n%s", params.Name, resp.StatusCode, err, raw)
	}
	return reply
}

// result decodes a successful reply's result, failing the test on an error.
func (r rpcReply) result(t *testing.T, what string) *sdk.CallToolResult {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("%s: JSON-RPC error %d: %s", what, r.Error.Code, r.Error.Message)
	}
	var res sdk.CallToolResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatalf("%s: result %s: %v", what, r.Result, err)
	}
	return &res
}

// question returns the one elicitation an input-required result asks, with its
// id, and the result's requestState.
func question(t *testing.T, what string, res *sdk.CallToolResult) (id string, q *sdk.ElicitParams, state string) {
	t.Helper()
	if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("%s: want resultType input_required with one input request and a requestState; got needs input %v, %d requests, state %q, content %q",
			what, res.NeedsInput(), len(res.InputRequests), res.RequestState, contentText(res))
	}
	for id, r := range res.InputRequests {
		q, ok := r.(*sdk.ElicitParams)
		if !ok {
			t.Fatalf("%s: input request %q is %T, want an elicitation", what, id, r)
		}
		return id, q, res.RequestState
	}
	panic("unreachable")
}

// refused checks that reply is the JSON-RPC error -32602 (invalid params),
// which a forged or used requestState gets, and returns its message.
func refused(t *testing.T, what string, reply rpcReply) string {
	t.Helper()
	if reply.Error == nil {
		res := reply.result(t, what)
		t.Errorf("%s: accepted (needs input %v, content %q); want error -32602", what, res.NeedsInput(), contentText(res))
		return ""
	}
	if reply.Error.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("%s: error %d %q; want -32602", what, reply.Error.Code, reply.Error.Message)
	}
	return reply.Error.Message
}

// logRefusal is refused, logging the message.
func logRefusal(t *testing.T, what string, reply rpcReply) {
	t.Helper()
	if msg := refused(t, what, reply); msg != "" {
		t.Logf("%s: refused: %s", what, msg)
	}
}

// elicitReplicas starts n replicas of elicitReplicaYAML with env (the state key
// and store, the API keys) and waits until they are ready; names start at first.
func elicitReplicas(t *testing.T, file string, first, n int, env ...string) []*mcpReplica {
	t.Helper()
	var out []*mcpReplica
	var all []*testtools.Replica
	for i := range n {
		port := testtools.FreePort(t)
		name := "r" + strconv.Itoa(first+i)
		r := &mcpReplica{Replica: testtools.StartReplica(t, name, []string{file}, append(slices.Clone(env), "HELIX_TEST_MCP="+strconv.Itoa(port))...), mcp: port}
		out = append(out, r)
		all = append(all, r.Replica)
	}
	testtools.WaitReady(t, 90*time.Second, all...)
	return out
}

// TestElicitAcrossStatelessReplicas: three stateless replicas behind round-robin
// HAProxy share a request_state key and a Redis store. A 2026-07-28 client calls
// an elicit: workflow; the question comes from one replica, the retry with the
// answer and the sealed state lands on another, which completes the workflow
// from the question on (the work before it is not done again). The same retry
// sent again is refused on every replica, and so is a state with a flipped byte,
// one sealed by a replica with another key, one for another tool or other
// arguments, and one issued to another API key. docs/scaling.md ("Measured: a
// question answered on another replica") reports what it checks.
func TestElicitAcrossStatelessReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four helix processes, Redis and HAProxy")
	}
	t.Parallel()
	redis := testtools.StartRedis(t)
	steps := newStepLog(t)
	file := writeFile(t, "helix.yaml", fmt.Sprintf(elicitReplicaYAML, steps.URL))
	keyA, keyB := "key-a-"+rand.Text(), "key-b-"+rand.Text()
	env := []string{"HELIX_TEST_KEY_A=" + keyA, "HELIX_TEST_KEY_B=" + keyB, "HELIX_TEST_STATE_STORE=" + redis.URL}
	replicas := elicitReplicas(t, file, 1, 3, append(slices.Clone(env), "HELIX_TEST_STATE_KEY="+stateKey(t))...)
	// A fourth replica, not behind the balancer, seals with a key of its own.
	stranger := elicitReplicas(t, file, 4, 1, append(slices.Clone(env), "HELIX_TEST_STATE_KEY="+stateKey(t))...)[0]
	lb := balancer(t, replicas, "")

	hc := &http.Client{Transport: &http.Transport{}, Timeout: callTimeout}
	t.Cleanup(hc.CloseIdleConnections)
	client := &newEraClient{url: "http://" + lb.Addr + "/mcp", apiKey: keyA, hc: hc}
	ship := func(token string) sdk.CallToolParams {
		return sdk.CallToolParams{Name: "ship", Arguments: map[string]any{"token": token}}
	}
	answer := func(p sdk.CallToolParams, id, street, state string) sdk.CallToolParams {
		p.InputResponses = sdk.InputResponseMap{id: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"street": street}}}
		p.RequestState = state
		return p
	}

	// Round 1: the question.
	first := client.call(t, ship("t1"))
	id, q, state := question(t, "round 1", first.result(t, "round 1"))
	if !strings.Contains(q.Message, "t1") {
		t.Errorf("round 1 asks %q; want the message naming parcel t1", q.Message)
	}
	reserved := steps.ranBy("t1", "reserve")
	if len(reserved) != 1 {
		t.Fatalf("round 1: reserve ran on %v; want once", reserved)
	}
	a := reserved[0]
	if got := steps.ranBy("t1", "ship"); len(got) != 0 {
		t.Fatalf("round 1 shipped on %v before the user answered", got)
	}

	// Round 2: the retry with the answer lands on the next replica of the round
	// robin and completes there.
	retry := answer(ship("t1"), id, "1 Main Street", state)
	done := client.call(t, retry).result(t, "the retry")
	if done.NeedsInput() || done.IsError {
		t.Fatalf("the retry: needs input %v, error %v: %q; want the workflow's answer", done.NeedsInput(), done.IsError, contentText(done))
	}
	var shipped struct{ Token, Step, Replica, Street string }
	if err := json.Unmarshal([]byte(contentText(done)), &shipped); err != nil || shipped.Step != "ship" {
		t.Fatalf("the retry answered %q (%v); want the ship step's reply", contentText(done), err)
	}
	b := shipped.Replica
	if b == a {
		t.Fatalf("the retry was answered by %s, which asked the question too: the test shows nothing across replicas", b)
	}
	if shipped.Token != "t1" || shipped.Street != "1 Main Street" {
		t.Errorf("shipped %+v; want token t1 to 1 Main Street", shipped)
	}
	// The step before the question ran once, where it was asked; the retry
	// resumed at the question on the other replica, with the exchange of round 1
	// (ship got X-Token, set before the question, from the state).
	if got := steps.ranBy("t1", "reserve"); !slices.Equal(got, []string{a}) {
		t.Errorf("reserve ran on %v; want once, on %s (round 1): the retry resumes at the question", got, a)
	}
	if got := steps.ranBy("t1", "ship"); !slices.Equal(got, []string{b}) {
		t.Errorf("ship ran on %v; want once, on %s", got, b)
	}
	t.Logf("question from %s, answer completed on %s", a, b)

	// Replay: the same retry again, on every replica (directly, and through the
	// balancer), is refused; nothing more runs.
	for _, r := range replicas {
		direct := &newEraClient{url: "http://127.0.0.1:" + strconv.Itoa(r.mcp) + "/mcp", apiKey: keyA, hc: hc}
		msg := refused(t, "replaying the retry on "+r.Name, direct.call(t, retry))
		t.Logf("replay on %s: %s", r.Name, msg)
	}
	for i := range 3 {
		refused(t, "replaying the retry through the balancer, "+strconv.Itoa(i+1), client.call(t, retry))
	}
	if got := steps.ranBy("t1", "ship"); len(got) != 1 {
		t.Errorf("after the replays ship ran on %v; want once", got)
	}

	// Forgeries, each against a fresh, unused state.
	fresh := func(token string, c *newEraClient) (string, string) {
		t.Helper()
		id, _, state := question(t, "question for "+token, c.call(t, ship(token)).result(t, "question for "+token))
		return id, state
	}
	id2, state2 := fresh("t2", client)

	flipped := []byte(state2)
	flipped[len(flipped)/2] ^= 0x01
	logRefusal(t, "a state with a flipped bit", client.call(t, answer(ship("t2"), id2, "2 Side Street", string(flipped))))
	// A change that keeps the state inside base64's alphabet: it decodes, and
	// only the seal's integrity check can tell.
	swapped := []byte(state2)
	if swapped[len(swapped)/2] == 'A' {
		swapped[len(swapped)/2] = 'B'
	} else {
		swapped[len(swapped)/2] = 'A'
	}
	logRefusal(t, "a state with a changed character", client.call(t, answer(ship("t2"), id2, "2 Side Street", string(swapped))))
	logRefusal(t, "the state of ship(t2) for ship(t3)", client.call(t, answer(ship("t3"), id2, "2 Side Street", state2)))
	logRefusal(t, "the state of ship for confirm", client.call(t, sdk.CallToolParams{Name: "confirm", Arguments: map[string]any{"token": "t2"},
		InputResponses: sdk.InputResponseMap{id2: &sdk.ElicitResult{Action: "accept", Content: map[string]any{}}}, RequestState: state2}))
	other := &newEraClient{url: client.url, apiKey: keyB, hc: hc}
	logRefusal(t, "a state issued to API key A, sent with key B", other.call(t, answer(ship("t2"), id2, "2 Side Street", state2)))

	strangerClient := &newEraClient{url: "http://127.0.0.1:" + strconv.Itoa(stranger.mcp) + "/mcp", apiKey: keyA, hc: hc}
	id4, state4 := fresh("t4", strangerClient)
	for range replicas {
		logRefusal(t, "a state sealed by a replica with another key", client.call(t, answer(ship("t4"), id4, "4 Far Street", state4)))
	}
	if got := steps.ranBy("t2", "ship"); len(got) != 0 {
		t.Errorf("a forged state shipped t2 on %v", got)
	}
	if got := steps.ranBy("t4", "ship"); len(got) != 0 {
		t.Errorf("a state of another key shipped t4 on %v", got)
	}
	// The forgeries did not use up the genuine state: with its own tool,
	// arguments and key it still completes (on whichever replica).
	if res := client.call(t, answer(ship("t2"), id2, "2 Side Street", state2)).result(t, "the genuine state of t2"); res.NeedsInput() || res.IsError {
		t.Errorf("the genuine state of t2 after the forgeries: needs input %v, %q", res.NeedsInput(), contentText(res))
	}

	// Hostile states: far larger than any a server issues, and not base64.
	logRefusal(t, "a state of 1 MiB", client.call(t, answer(ship("t5"), "x", "5 Big Street", strings.Repeat("A", 1<<20))))
	logRefusal(t, "a state that is not base64", client.call(t, answer(ship("t5"), "x", "5 Big Street", "%not a state%")))

	// Without the shared store a retry cannot be checked against replays: it is
	// refused, saying to try again, and nothing runs. Asking needs no store.
	id6, state6 := fresh("t6", client)
	redis.Stop()
	logRefusal(t, "a retry while Redis is down", client.call(t, answer(ship("t6"), id6, "6 Dark Street", state6)))
	if got := steps.ranBy("t6", "ship"); len(got) != 0 {
		t.Errorf("with Redis down t6 shipped on %v", got)
	}
	fresh("t7", client)
	for _, r := range append(replicas, stranger) {
		if r.Exited() {
			t.Errorf("replica %s exited: %s", r.Name, r.Logs.String())
		}
	}
}
