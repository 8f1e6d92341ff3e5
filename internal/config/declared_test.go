package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// declaredSections are the sections of the file declared as a Shape (decoded with
// Decoder.Decode) rather than described by probing their decoder, by the path of
// their schema in the file's schema.
var declaredSections = map[string]*Shape{
	"/properties/helix/properties/cluster":                 &clusterShape,
	"/properties/helix/properties/tracing":                 &tracingShape,
	"/properties/tests/items":                              &testCaseShape,
	"/properties/tests/items/properties/mocks/items":       &mockShape,
	"/properties/workflows/items/properties/error_handler": &errorHandlerShape,
}

// A declared section is the one source of its schema: every key, in declaration
// order, with its description, and the required keys.
func TestSectionsSchemaFromTheirDeclaration(t *testing.T) {
	b, err := FileSchema(SchemaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for at, sh := range declaredSections {
		raw := json.RawMessage(b)
		for _, seg := range strings.Split(strings.TrimPrefix(at, "/"), "/") {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatalf("%s: %v", at, err)
			}
			raw = obj[seg]
		}
		var sec struct {
			Description string                     `json:"description"`
			Properties  map[string]json.RawMessage `json:"properties"`
			Required    []string                   `json:"required"`
		}
		if err := json.Unmarshal(raw, &sec); err != nil {
			t.Fatalf("%s: %v", at, err)
		}
		// A section without a description of its own takes its key's (settingDocs).
		if sh.Description != "" && sec.Description != sh.Description {
			t.Errorf("%s: description %q, declared %q", at, sec.Description, sh.Description)
		}
		var current []string // former spellings are listed too, deprecated
		for _, k := range propertyOrder(t, raw) {
			var prop struct{ Deprecated bool }
			if json.Unmarshal(sec.Properties[k], &prop) == nil && !prop.Deprecated {
				current = append(current, k)
			}
		}
		if got, want := strings.Join(current, ","), strings.Join(sh.KeyNames(), ","); got != want {
			t.Errorf("%s: schema keys %s, declared %s", at, got, want)
		}
		var required []string
		for _, k := range sh.Keys {
			var prop struct{ Description string }
			if err := json.Unmarshal(sec.Properties[k.Name], &prop); err != nil || prop.Description != k.Description {
				t.Errorf("%s/%s: description %q, declared %q (%v)", at, k.Name, prop.Description, k.Description, err)
			}
			if k.Required {
				required = append(required, k.Name)
			}
		}
		if strings.Join(sec.Required, ",") != strings.Join(required, ",") {
			t.Errorf("%s: required %v, declared %v", at, sec.Required, required)
		}
	}
}

// propertyOrder lists the keys of the "properties" object of a schema in the
// order the generator wrote them.
func propertyOrder(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(obj["properties"])))
	var keys []string
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if depth == 1 {
				keys = append(keys, v)
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return keys
}

// helix.cluster.lock_id takes the whole 64-bit range of an advisory lock key.
func TestClusterLockIDIs64Bit(t *testing.T) {
	cfg, errs := load(t, "helix:\n  cluster:\n    leader: postgres://db/x\n    lock_id: -9223372036854775808\n")
	if errs != nil {
		t.Fatal(errs)
	}
	if id := cfg.Helix.Cluster.LockID; id == nil || *id != -9223372036854775808 {
		t.Errorf("lock_id = %v", id)
	}
	_, errs = load(t, "helix:\n  cluster:\n    leader: postgres://db/x\n    lock_id: 9223372036854775808\n")
	if errs == nil || !strings.Contains(errs.Error(), "helix.yaml:4:14: helix.cluster.lock_id: want an integer") {
		t.Errorf("out of range: %v", errs)
	}
}

// Each wrong value of helix.tracing is reported once, by the declaration or by
// the check after it, never by both.
func TestTracingErrorsReportedOnce(t *testing.T) {
	t.Setenv("HELIX_TEST_OTLP_KEY", "k")
	cfg, errs := load(t, "helix:\n  tracing:\n    exporter: otlp\n    headers: {x-key: \"${env:HELIX_TEST_OTLP_KEY}\", n: 1, e: }\n")
	if errs != nil {
		t.Fatal(errs)
	}
	if h := cfg.Helix.Tracing.Headers; len(h) != 3 || h["x-key"] != "k" || h["n"] != "1" || h["e"] != "" {
		t.Errorf("headers = %v", h)
	}
	_, errs = load(t, "helix:\n  tracing:\n    exporter: otpl\n    headers: {a: [1]}\n    protocol: grcp\n")
	want := []string{
		`helix.yaml:3:15: helix.tracing.exporter: unknown tracing exporter "otpl" (did you mean "otlp"?)`,
		`helix.yaml:4:18: helix.tracing.headers.a: want a string, not a list`,
		`helix.yaml:5:15: helix.tracing.protocol: unknown OTLP protocol "grcp" (did you mean "grpc"?)`,
	}
	var got []string
	for _, e := range errs.Sorted() {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// error_handler decodes from its declaration; its bounds keep their messages.
func TestErrorHandlerFromDeclaration(t *testing.T) {
	cfg, errs := load(t, `
workflows:
  - id: w
    trigger: direct://w
    error_handler:
      dead_letter_channel: log:dead
      default: {maximum_redeliveries: 3, redelivery_delay: 10ms, backoff_multiplier: 2, maximum_redelivery_delay: 1s}
    steps: []
`)
	if errs != nil {
		t.Fatal(errs)
	}
	eh := cfg.Workflows[0].ErrorHandler
	if eh.DeadLetterChannel != "log:dead" || eh.Default == nil || eh.Default.MaximumRedeliveries != 3 ||
		eh.Default.RedeliveryDelay.String() != "10ms" || eh.Default.BackoffMultiplier != 2 || eh.Default.MaximumRedeliveryDelay.String() != "1s" ||
		eh.Default.Pos.Line != 7 {
		t.Errorf("error_handler = %+v %+v", eh, eh.Default)
	}
	_, errs = load(t, `
workflows:
  - id: w
    trigger: direct://w
    error_handler:
      default: {maximum_redeliveries: -2, backoff_multiplier: -1, redelivery_dalay: 1s}
    steps: []
`)
	want := []string{
		"helix.yaml:6:39: workflows[0].error_handler.default.maximum_redeliveries: maximum_redeliveries must be -1 (forever), 0 or more",
		"helix.yaml:6:63: workflows[0].error_handler.default.backoff_multiplier: backoff_multiplier must not be negative",
		`helix.yaml:6:67: workflows[0].error_handler.default: unknown key "redelivery_dalay" in error_handler.default (did you mean "redelivery_delay"?)`,
	}
	var got []string
	for _, e := range errs.Sorted() {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
