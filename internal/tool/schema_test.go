package tool

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"testing"
)

// addresses are the pointers jsonschema-go prints in its errors, new each run.
var addresses = regexp.MustCompile(`0x[0-9a-f]+`)

func errText(err error) string { return addresses.ReplaceAllString(fmt.Sprint(err), "0x") }

// validateAlways is InputValidator.Validate as it was before it skipped
// ApplyDefaults for schemas without defaults: the reference for that shortcut.
func (v *InputValidator) validateAlways(args map[string]any) (out map[string]any, err error) {
	out = make(map[string]any, len(args))
	for k, x := range args {
		out[k] = x
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("applying defaults: %v", r)
		}
	}()
	if err := v.rs.ApplyDefaults(&out); err != nil {
		return nil, fmt.Errorf("applying defaults: %w", err)
	}
	for k, x := range out {
		if _, given := args[k]; !given {
			out[k] = renumber(x)
		}
	}
	if v.quick != nil && v.quick.valid(out) {
		return out, nil
	}
	if err := v.rs.Validate(out); err != nil {
		return nil, SchemaError(err)
	}
	return out, nil
}

// Validate answers exactly as it did when it always ran ApplyDefaults, with
// decoded arguments and with values no decoder gives (structs, typed maps).
func TestValidateSkipsDefaultsAsBefore(t *testing.T) {
	type point struct{ X int }
	schemas := []string{
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
		`{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"integer"}}}}}`,
		`{"type":"object","properties":{"o":{"properties":{"a":{"type":"integer"}}},"n":{"type":"number"}}}`,
		`{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"integer","default":3}}}}}`,
		`{"type":"object","properties":{"n":{"type":"integer","default":7},"s":{"type":"string"}}}`,
		`{"type":"object","additionalProperties":true}`,
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"a":{"default":1}}}}}}`,
	}
	args := []map[string]any{
		{},
		{"text": "hi"},
		{"text": 3.5},
		{"text": nil},
		{"o": map[string]any{}},
		{"o": map[string]any{"a": int64(1)}},
		{"o": map[string]any{"a": "x"}},
		{"o": nil, "n": int64(2)},
		{"o": map[string]any{"a": map[string]any{"b": 1.5}}},
		{"o": point{1}},
		{"o": map[int]any{1: "x"}},
		{"o": map[string]string{"a": "x"}},
		{"o": &point{1}},
		{"o": []any{map[string]any{}}, "l": []any{map[string]any{}}},
		{"s": point{2}, "n": int64(1)},
		{"text": "hi", "extra": point{3}},
	}
	for _, schema := range schemas {
		v, err := CompileInput(json.RawMessage(schema))
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		for _, a := range args {
			want, wantErr := v.validateAlways(a)
			got, gotErr := v.Validate(a)
			if errText(wantErr) != errText(gotErr) || !reflect.DeepEqual(want, got) {
				t.Errorf("%s with %#v:\n got %#v, %v\nwant %#v, %v", schema, a, got, gotErr, want, wantErr)
			}
		}
	}
}

// Arguments a schema without defaults accepts as they are come back as they
// are: no copy per call. With defaults, the caller's map is left unchanged.
func TestValidateCopiesOnlyToApplyDefaults(t *testing.T) {
	plain, err := CompileInput(json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"text": "hello"}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := plain.Validate(args); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Validate of plain arguments allocates %v times, want 0", n)
	}
	withDefault, err := CompileInput(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","default":7},"s":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	args = map[string]any{"s": "x"}
	out, err := withDefault.Validate(args)
	if err != nil || out["n"] != int64(7) {
		t.Fatalf("defaults not applied: %v, %v", out, err)
	}
	if _, changed := args["n"]; changed || len(args) != 1 {
		t.Errorf("Validate changed its caller's arguments: %v", args)
	}
	if out, err := plain.Validate(nil); err == nil || out != nil {
		t.Errorf("nil arguments against a required property: %v, %v", out, err)
	}
}
