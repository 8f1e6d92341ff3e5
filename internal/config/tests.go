package config

import (
	"regexp"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/uri"
)

// TestConfig is one entry of the top-level `tests:` list: a unit test of a workflow
// that `helix test` runs (internal/workflowtest). `helix run` and `helix validate` only
// check its syntax.
type TestConfig struct {
	Pos  Pos
	Path string
	// Name says what the case checks; Workflow is the id of the workflow or tool run.
	Name        string
	Workflow    string
	WorkflowPos Pos
	// Timeout bounds the run of the case; 0 means the runner's default.
	Timeout time.Duration
	Input   TestMessage
	Expect  TestExpect
	Mocks   []MockConfig
}

// TestMessage is a body and headers, given as YAML.
type TestMessage struct {
	// Body is the value (HasBody: it was given, perhaps as null).
	Body    any
	HasBody bool
	Headers map[string]any
}

// TestExpect is what a case checks after the run. Every field given must hold.
type TestExpect struct {
	Pos Pos
	// Body must equal the reply body (HasBody: it was given).
	Body    any
	HasBody bool
	// BodySubset: every key and list item given must be in the reply body.
	BodySubset    any
	HasBodySubset bool
	// BodyContains and BodyMatches are checked against the body as text (JSON for
	// structured bodies).
	BodyContains string
	BodyMatches  *regexp.Regexp
	Headers      map[string]any
	// Error: the run must fail with an error containing this text (HasError).
	Error    string
	HasError bool
}

// MockConfig replaces a target endpoint for one case.
type MockConfig struct {
	Pos  Pos
	Path string
	// URI is matched exactly (after normalisation) or, when it has neither path nor
	// options, against every target with its scheme and host.
	URI    string
	URIPos Pos
	Parsed *uri.URI
	// Reply is the canned answer; Error, when set, fails the call instead. Delay
	// holds every call back first (a slow or hanging service).
	Reply    TestMessage
	Error    string
	HasError bool
	Delay    time.Duration
	// Calls, when not nil, is how many calls the mock must receive; Received, when
	// HasReceived, is a subset every call's body must contain.
	Calls       *int
	Received    any
	HasReceived bool
}

// The shapes of a tests: entry, declared once: decoding, the JSON Schema and the
// docs read them. What a shape cannot say (a regular expression that compiles, a
// mock's URI, expectations that exclude each other) the decoders below check on
// the decoded values.
var (
	testHeadersShape = Shape{Type: TypeMap, What: "headers", Values: &Shape{Type: TypeString}}
	testBodyShape    = Shape{Type: TypeAny, Description: "The body: a mapping or list (JSON-like data), a number or a string (sent as it is)."}
	testInputShape   = Shape{Type: TypeObject, What: "a test's input", Keys: []Key{
		{Name: "body", Shape: testBodyShape},
		{Name: "headers", Shape: testHeadersShape},
	}}
	mockReplyShape = withWhat(testInputShape, "a mock's reply")

	testExpectShape = Shape{Type: TypeObject, What: "a test's expect", Keys: []Key{
		{Name: "body", Shape: Shape{Type: TypeAny, Description: "The reply body must equal this value (mappings compare key by key, numbers by value)."}},
		{Name: "body_subset", Shape: Shape{Type: TypeAny, Description: "Every key and list item given must be in the reply body; other keys may be there too."}},
		{Name: "body_contains", Shape: str("The body as text (structured bodies as JSON) must contain this string.")},
		{Name: "body_matches", Shape: str("The body as text (structured bodies as JSON) must match this regular expression (RE2 syntax).")},
		{Name: "headers", Shape: testHeadersShape},
		{Name: "error", Shape: str("The run must fail with an error containing this text (\"\" for any error).")},
	}}

	mockShape = Shape{Type: TypeObject, What: "a mock", Keys: []Key{
		{Name: "uri", Required: true, Shape: str("The target replaced: an exact URI, or scheme://host alone for every URI of that host.")},
		{Name: "reply", Shape: mockReplyShape},
		{Name: "error", Shape: str("Fail every call with this error instead of replying.")},
		{Name: "delay", Shape: Shape{Type: TypeDuration, Description: "Hold every call back this long before answering (a slow service; the case's timeout still applies)."}},
		{Name: "expect", Shape: Shape{Type: TypeObject, What: "a mock's expect", Keys: []Key{
			{Name: "calls", Shape: Shape{Type: TypeInt, Description: "How many calls the mock must receive."}},
			{Name: "body", Shape: Shape{Type: TypeAny, Description: "Every call's body must contain these keys and list items."}},
		}}},
	}}

	testCaseShape = Shape{Type: TypeObject, What: "a test", Keys: []Key{
		{Name: "name", Required: true, Shape: str("What the case checks; helix test prints it with the case's position.")},
		{Name: "workflow", Required: true, Shape: str("The id of the workflow or tool the case runs.")},
		{Name: "timeout", Shape: Shape{Type: TypeDuration, Description: "How long the case may run (default 10s): a workflow still running then fails the case."}},
		{Name: "input", Shape: testInputShape},
		{Name: "expect", Shape: testExpectShape},
		{Name: "mocks", Shape: Shape{Type: TypeList, Items: &mockShape}},
	}}
)

func withWhat(s Shape, what string) Shape { s.What = what; return s }

func decodeTest(d *Decoder, n *yaml.Node, path string) (TestConfig, bool) {
	v := d.Decode(n, path, "a test", &testCaseShape)
	tc := TestConfig{Pos: d.Pos(n), Path: path}
	if d.desc != nil || !isMapping(v.Node) {
		return tc, false
	}
	tc.Name, tc.Workflow, tc.Timeout = v.String("name"), v.String("workflow"), v.Duration("timeout")
	if wn := v.NodeOf("workflow"); wn != nil {
		tc.WorkflowPos = d.Pos(wn)
	}
	if in := v.Object("input"); in != nil {
		tc.Input = testMessage(d, in)
	}
	if ex := v.Object("expect"); ex != nil {
		tc.Expect = decodeTestExpect(d, ex)
	}
	for _, mv := range v.Objects("mocks") {
		if m, ok := decodeMock(d, mv); ok {
			tc.Mocks = append(tc.Mocks, m)
		}
	}
	return tc, tc.Name != "" && tc.Workflow != ""
}

// testMessage reads a decoded input: or reply: mapping.
func testMessage(d *Decoder, v *Values) TestMessage {
	var m TestMessage
	if bn := v.NodeOf("body"); bn != nil {
		m.Body, m.HasBody = d.Value(bn, v.PathOf("body")), true
	}
	if v.Has("headers") {
		m.Headers = testHeaders(d, v)
	}
	return m
}

// testHeaders reads a decoded headers: map; the shape reported values that are no
// scalars.
func testHeaders(d *Decoder, v *Values) map[string]any {
	pairs := v.Pairs("headers")
	out := make(map[string]any, len(pairs))
	for _, p := range pairs {
		if hn := d.Resolve(p.Value); hn != nil && hn.Kind == yaml.ScalarNode {
			out[p.Key] = d.String(hn, KeyPath(v.PathOf("headers"), p.Key))
		}
	}
	return out
}

func decodeTestExpect(d *Decoder, v *Values) TestExpect {
	e := TestExpect{Pos: d.Pos(v.Node)}
	if bn := v.NodeOf("body"); bn != nil {
		e.Body, e.HasBody = d.Value(bn, v.PathOf("body")), true
	}
	if bn := v.NodeOf("body_subset"); bn != nil {
		e.BodySubset, e.HasBodySubset = d.Value(bn, v.PathOf("body_subset")), true
	}
	e.BodyContains = v.String("body_contains")
	if mn := v.NodeOf("body_matches"); mn != nil {
		re, err := regexp.Compile(v.String("body_matches"))
		if err != nil {
			d.Errorf(mn, v.PathOf("body_matches"), "body_matches is not a valid regular expression: %v", err).Hint =
				"the syntax is Go's RE2: no look-ahead, no back-references"
		} else {
			e.BodyMatches = re
		}
	}
	if v.Has("headers") {
		e.Headers = testHeaders(d, v)
	}
	e.Error, e.HasError = v.String("error"), v.Has("error")
	if e.HasError && (e.HasBody || e.HasBodySubset || e.BodyContains != "" || e.BodyMatches != nil) {
		d.Errorf(v.Node, v.Path, "a test expecting an error cannot also expect a body").Hint =
			"a failed run has no reply; split the checks into two tests"
	}
	return e
}

func decodeMock(d *Decoder, v *Values) (MockConfig, bool) {
	m := MockConfig{Pos: d.Pos(v.Node), Path: v.Path}
	m.URI = v.String("uri")
	if un := v.NodeOf("uri"); un != nil {
		m.URIPos = d.Pos(un)
		if m.URI == "" {
			d.Errorf(un, v.PathOf("uri"), "a mock needs the URI of the target it replaces").Hint = "for example uri: http://api.example.com"
		} else if u, err := uri.Parse(m.URI); err != nil {
			d.Errorf(un, v.PathOf("uri"), "invalid mock URI: %v", err).Hint = "write it as a workflow's target, e.g. http://api.example.com/users"
		} else {
			m.Parsed = u
		}
	}
	if rv := v.Object("reply"); rv != nil {
		m.Reply = testMessage(d, rv)
	}
	m.Error, m.HasError = v.String("error"), v.Has("error")
	m.Delay = v.Duration("delay")
	if ev := v.Object("expect"); ev != nil {
		if cn := ev.NodeOf("calls"); cn != nil {
			c := ev.Int("calls")
			if c < 0 {
				d.Errorf(cn, ev.PathOf("calls"), "calls cannot be negative")
			}
			m.Calls = &c
		}
		if bn := ev.NodeOf("body"); bn != nil {
			m.Received, m.HasReceived = d.Value(bn, ev.PathOf("body")), true
		}
	}
	if m.HasError && (m.Reply.HasBody || len(m.Reply.Headers) > 0) {
		d.Errorf(v.Node, v.Path, "a mock answers with a reply or an error, not both").Hint = "remove reply: or error:"
	}
	return m, m.Parsed != nil
}
