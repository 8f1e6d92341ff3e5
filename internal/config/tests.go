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

func decodeTest(d *Decoder, n *yaml.Node, path string) (TestConfig, bool) {
	tc := TestConfig{Pos: d.Pos(n), Path: path}
	ok := d.Mapping(n, path, "a test", Fields{
		"name": func(v *yaml.Node, p string) {
			d.Doc(v, "What the case checks; helix test prints it with the case's position.")
			tc.Name = d.String(v, p)
		},
		"workflow": func(v *yaml.Node, p string) {
			d.Doc(v, "The id of the workflow or tool the case runs.")
			tc.Workflow, tc.WorkflowPos = d.String(v, p), d.Pos(v)
		},
		"timeout": func(v *yaml.Node, p string) {
			d.Doc(v, "How long the case may run (default 10s): a workflow still running then fails the case.")
			tc.Timeout = d.Duration(v, p)
		},
		"input":  func(v *yaml.Node, p string) { tc.Input = decodeTestMessage(d, v, p, "a test's input") },
		"expect": func(v *yaml.Node, p string) { tc.Expect = decodeTestExpect(d, v, p) },
		"mocks":  func(v *yaml.Node, p string) { tc.Mocks = decodeList(d, v, p, "mocks", decodeMock) },
	}, "name", "workflow")
	return tc, ok && tc.Name != "" && tc.Workflow != ""
}

func decodeTestMessage(d *Decoder, n *yaml.Node, path, what string) TestMessage {
	var m TestMessage
	d.Mapping(n, path, what, Fields{
		"body": func(v *yaml.Node, p string) {
			d.Doc(v, "The body: a mapping or list (JSON-like data), a number or a string (sent as it is).")
			m.Body, m.HasBody = d.Value(v, p), true
		},
		"headers": func(v *yaml.Node, p string) { m.Headers = decodeTestHeaders(d, v, p) },
	})
	return m
}

func decodeTestHeaders(d *Decoder, n *yaml.Node, path string) map[string]any {
	pairs, _ := d.Pairs(n, path, "headers")
	out := make(map[string]any, len(pairs))
	for _, p := range pairs {
		out[p.Key] = d.String(p.Value, KeyPath(path, p.Key))
	}
	return out
}

func decodeTestExpect(d *Decoder, n *yaml.Node, path string) TestExpect {
	e := TestExpect{Pos: d.Pos(n)}
	d.Mapping(n, path, "a test's expect", Fields{
		"body": func(v *yaml.Node, p string) {
			d.Doc(v, "The reply body must equal this value (mappings compare key by key, numbers by value).")
			e.Body, e.HasBody = d.Value(v, p), true
		},
		"body_subset": func(v *yaml.Node, p string) {
			d.Doc(v, "Every key and list item given must be in the reply body; other keys may be there too.")
			e.BodySubset, e.HasBodySubset = d.Value(v, p), true
		},
		"body_contains": func(v *yaml.Node, p string) {
			d.Doc(v, "The body as text (structured bodies as JSON) must contain this string.")
			e.BodyContains = d.String(v, p)
		},
		"body_matches": func(v *yaml.Node, p string) {
			d.Doc(v, "The body as text (structured bodies as JSON) must match this regular expression (RE2 syntax).")
			s := d.String(v, p)
			re, err := regexp.Compile(s)
			if err != nil {
				d.Errorf(v, p, "body_matches is not a valid regular expression: %v", err).Hint =
					"the syntax is Go's RE2: no look-ahead, no back-references"
				return
			}
			e.BodyMatches = re
		},
		"headers": func(v *yaml.Node, p string) { e.Headers = decodeTestHeaders(d, v, p) },
		"error": func(v *yaml.Node, p string) {
			d.Doc(v, "The run must fail with an error containing this text (\"\" for any error).")
			e.Error, e.HasError = d.String(v, p), true
		},
	})
	if e.HasError && (e.HasBody || e.HasBodySubset || e.BodyContains != "" || e.BodyMatches != nil) {
		d.Errorf(n, path, "a test expecting an error cannot also expect a body").Hint =
			"a failed run has no reply; split the checks into two tests"
	}
	return e
}

func decodeMock(d *Decoder, n *yaml.Node, path string) (MockConfig, bool) {
	m := MockConfig{Pos: d.Pos(n), Path: path}
	ok := d.Mapping(n, path, "a mock", Fields{
		"uri": func(v *yaml.Node, p string) {
			d.Doc(v, "The target replaced: an exact URI, or scheme://host alone for every URI of that host.")
			m.URI, m.URIPos = d.String(v, p), d.Pos(v)
			if d.desc != nil {
				return
			}
			if m.URI == "" {
				d.Errorf(v, p, "a mock needs the URI of the target it replaces").Hint = "for example uri: http://api.example.com"
				return
			}
			u, err := uri.Parse(m.URI)
			if err != nil {
				d.Errorf(v, p, "invalid mock URI: %v", err).Hint = "write it as a workflow's target, e.g. http://api.example.com/users"
				return
			}
			m.Parsed = u
		},
		"reply": func(v *yaml.Node, p string) { m.Reply = decodeTestMessage(d, v, p, "a mock's reply") },
		"error": func(v *yaml.Node, p string) {
			d.Doc(v, "Fail every call with this error instead of replying.")
			m.Error, m.HasError = d.String(v, p), true
		},
		"delay": func(v *yaml.Node, p string) {
			d.Doc(v, "Hold every call back this long before answering (a slow service; the case's timeout still applies).")
			m.Delay = d.Duration(v, p)
		},
		"expect": func(v *yaml.Node, p string) {
			d.Mapping(v, p, "a mock's expect", Fields{
				"calls": func(v *yaml.Node, p string) {
					d.Doc(v, "How many calls the mock must receive.")
					c := d.Int(v, p)
					if c < 0 {
						d.Errorf(v, p, "calls cannot be negative")
					}
					m.Calls = &c
				},
				"body": func(v *yaml.Node, p string) {
					d.Doc(v, "Every call's body must contain these keys and list items.")
					m.Received, m.HasReceived = d.Value(v, p), true
				},
			})
		},
	}, "uri")
	if m.HasError && (m.Reply.HasBody || len(m.Reply.Headers) > 0) {
		d.Errorf(n, path, "a mock answers with a reply or an error, not both").Hint = "remove reply: or error:"
	}
	return m, ok && m.Parsed != nil
}
