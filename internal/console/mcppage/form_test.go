package mcppage

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestFormForMapsEveryType(t *testing.T) {
	t.Parallel()
	f := FormFor([]byte(`{"type":"object","required":["name","count"],"properties":{
		"name":{"type":"string","description":"who","default":"Ada"},
		"count":{"type":"integer","default":3},
		"rate":{"type":"number","default":0.1},
		"loud":{"type":"boolean","default":true},
		"mood":{"type":"string","enum":["calm","happy"],"default":"happy"},
		"tags":{"type":"array","items":{"type":"string"},"default":["a"]},
		"opts":{"type":"object"},
		"maybe":{"type":["string","null"]},
		"either":{"type":["string","number"]},
		"free":{}
	}}`))
	if f.Raw || f.Total != 10 {
		t.Fatalf("form = %+v", f)
	}
	got := map[string]Field{}
	var order []string
	for _, fd := range f.Fields {
		got[fd.Name] = fd
		order = append(order, fd.Name)
	}
	if order[0] != "count" || order[1] != "name" {
		t.Errorf("required fields come first, by name: %v", order)
	}
	for name, want := range map[string]struct{ kind, value string }{
		"name": {KindString, "Ada"}, "count": {KindInteger, "3"}, "rate": {KindNumber, "0.1"},
		"loud": {KindBoolean, "true"}, "mood": {KindEnum, "happy"}, "tags": {KindJSON, `["a"]`},
		"opts": {KindJSON, ""}, "maybe": {KindString, ""}, "either": {KindJSON, ""}, "free": {KindJSON, ""},
	} {
		if got[name].Kind != want.kind || got[name].Value != want.value {
			t.Errorf("%s: kind %q value %q, want %q %q", name, got[name].Kind, got[name].Value, want.kind, want.value)
		}
	}
	if !got["name"].Required || got["rate"].Required || got["name"].Description != "who" {
		t.Errorf("name = %+v, rate = %+v", got["name"], got["rate"])
	}
	if !reflect.DeepEqual(got["mood"].Options, []string{"calm", "happy"}) {
		t.Errorf("mood options = %v", got["mood"].Options)
	}
}

func TestFormArguments(t *testing.T) {
	t.Parallel()
	f := FormFor([]byte(`{"type":"object","required":["name"],"properties":{
		"name":{"type":"string"},"n":{"type":"integer"},"x":{"type":"number"},"b":{"type":"boolean"},
		"e":{"enum":["a","b"]},"j":{"type":"array"}}}`))
	args, err := f.Arguments(url.Values{"arg.name": {" Ada "}, "arg.n": {"7"}, "arg.x": {"2.5"}, "arg.b": {"false"},
		"arg.e": {"b"}, "arg.j": {"[1, 2]"}, "credential": {"k"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": " Ada ", "n": int64(7), "x": 2.5, "b": false, "e": "b", "j": []any{1.0, 2.0}}
	if !reflect.DeepEqual(args, want) {
		t.Fatalf("args = %#v, want %#v", args, want)
	}
	// Empty optional fields are left out.
	if args, err := f.Arguments(url.Values{"arg.name": {"x"}, "arg.n": {""}}); err != nil || len(args) != 1 {
		t.Fatalf("args = %v, %v", args, err)
	}
	for _, c := range []struct {
		v    url.Values
		want string
	}{
		{url.Values{}, `field "name": is required`},
		{url.Values{"arg.name": {"x"}, "arg.n": {"1.5"}}, `field "n": "1.5" is not an integer`},
		{url.Values{"arg.name": {"x"}, "arg.x": {"ten"}}, `field "x": "ten" is not a number`},
		{url.Values{"arg.name": {"x"}, "arg.x": {"Inf"}}, `field "x": "Inf" is not a number`},
		{url.Values{"arg.name": {"x"}, "arg.b": {"yes"}}, `field "b": "yes" is not true or false`},
		{url.Values{"arg.name": {"x"}, "arg.e": {"c"}}, `field "e": "c" is not one of the allowed values`},
		{url.Values{"arg.name": {"x"}, "arg.j": {"[1,"}}, `field "j": not JSON`},
		{url.Values{"arguments": {"[1]"}}, `field "arguments": not a JSON object`},
	} {
		_, err := f.Arguments(c.v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.v, err, c.want)
		}
	}
	// The extra-arguments textarea fills what the fields do not, and counts
	// for a required field.
	args, err = f.Arguments(url.Values{"arguments": {`{"name":"Bo","extra":1}`}})
	if err != nil || args["name"] != "Bo" || args["extra"] != 1.0 {
		t.Fatalf("args = %v, %v", args, err)
	}
}

func TestFormForHostileSchemas(t *testing.T) {
	t.Parallel()
	// A $ref loop ends as a JSON field, not a hang.
	f := FormFor([]byte(`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"},"b":{"$ref":"#/$defs/s"}},
		"$defs":{"x":{"$ref":"#/$defs/y"},"y":{"$ref":"#/$defs/x"},"s":{"type":"string","description":"via ref"}}}`))
	if len(f.Fields) != 2 || f.Fields[0].Kind != KindJSON || f.Fields[1].Kind != KindString || f.Fields[1].Description != "via ref" {
		t.Fatalf("refs: %+v", f.Fields)
	}
	// A deep schema: only the top level becomes fields.
	deep := func(n int) []byte {
		return []byte(strings.Repeat(`{"type":"object","properties":{"d":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n))
	}
	f = FormFor(deep(1000))
	if len(f.Fields) != 1 || f.Fields[0].Kind != KindJSON {
		t.Fatalf("deep: %+v", f)
	}
	// Deeper than the JSON decoder goes: a raw form saying why.
	if f = FormFor(deep(6000)); !f.Raw || !strings.Contains(f.Reason, "exceeded max depth") {
		t.Fatalf("too deep: %+v", f)
	}
	// Many properties: capped, and said so.
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 5000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%05d":{"type":"string"}`, i)
	}
	b.WriteString(`}}`)
	f = FormFor([]byte(b.String()))
	if len(f.Fields) != maxFields || f.Total != 5000 {
		t.Fatalf("wide: %d fields of %d", len(f.Fields), f.Total)
	}
	// Too large, not JSON, not an object: one raw JSON textarea, with why.
	for schema, why := range map[string]string{
		`{"type":"object","description":"` + strings.Repeat("x", maxSchemaBytes) + `"}`: "bytes",
		`{not json`:         "could not be read as a JSON object",
		`{"type":"string"}`: `type is "string"`,
		``:                  "no input schema",
		`{"type":"object"}`: "lists no properties",
	} {
		f := FormFor([]byte(schema))
		if !f.Raw || !strings.Contains(f.Reason, why) {
			t.Errorf("%.40q: form = %+v, want raw because %q", schema, f, why)
		}
	}
	// A huge enum is a text field; a huge default is not shown.
	many := `"enum":[` + strings.Repeat(`"x",`, maxEnum) + `"y"]`
	f = FormFor([]byte(`{"properties":{"e":{"type":"string",` + many + `},"d":{"type":"string","default":"` + strings.Repeat("z", maxDefaultChars+1) + `"}}}`))
	for _, fd := range f.Fields {
		if fd.Kind == KindEnum || len(fd.Value) > maxDefaultChars {
			t.Errorf("field %s: kind %s, %d-byte value", fd.Name, fd.Kind, len(fd.Value))
		}
	}
}

func FuzzFormFor(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"$ref":"#"}}}`), "a=1")
	f.Add([]byte(`{"properties":{"n":{"type":"integer"}},"required":["n"]}`), "arg.n=2&arguments=%7B%7D")
	f.Fuzz(func(t *testing.T, schema []byte, query string) {
		form := FormFor(schema)
		v, _ := url.ParseQuery(query)
		_, _ = form.Arguments(v)
	})
}
