package config

import (
	"strings"
	"testing"
)

func TestURITemplateMatch(t *testing.T) {
	for _, tc := range []struct {
		tmpl, uri string
		want      map[string]string // nil: no match
	}{
		{"app://orders/{id}", "app://orders/42", map[string]string{"id": "42"}},
		{"app://orders/{id}", "app://orders/a%20b", map[string]string{"id": "a b"}},
		{"app://orders/{id}", "app://orders/4/2", nil},
		{"app://orders/{id}", "app://orders/", nil},
		{"app://files/{+path}", "app://files/a/b.txt", map[string]string{"path": "a/b.txt"}},
		{"test://template/{id}/data", "test://template/123/data", map[string]string{"id": "123"}},
		{"app://{kind}/{id}.json", "app://order/7.json", map[string]string{"kind": "order", "id": "7"}},
		{"app://x.{id}", "app://xy7", nil}, // the dot is a literal, not "any character"
	} {
		ut, err := ParseURITemplate(tc.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tc.tmpl, err)
		}
		got, ok := ut.Match(tc.uri)
		if ok != (tc.want != nil) {
			t.Errorf("%s ~ %s: match %v, want %v", tc.tmpl, tc.uri, ok, tc.want != nil)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s ~ %s: %s=%q, want %q", tc.tmpl, tc.uri, k, got[k], v)
			}
		}
	}
}

func TestResourcesAndPromptsDecode(t *testing.T) {
	cfg, err := LoadBytes("helix.yaml", []byte(`
resources:
  - {uri: app://a, name: a, text: "", mime_type: text/markdown}
  - {uri: app://b, name: b, file: data/b.bin}
prompts:
  - name: p
    arguments: [x, {name: y, required: true}]
    completions: {x: [one, two]}
    messages:
      - {role: assistant, content: "hi ${args.x}"}
      - content: {image: {file: logo.png}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Resources
	if len(r) != 2 || !r[0].HasText || r[0].Text != "" || r[0].MIMEType != "text/markdown" || !strings.HasSuffix(r[1].File, "/data/b.bin") {
		t.Fatalf("resources %+v", r)
	}
	p := cfg.Prompts[0]
	if len(p.Arguments) != 2 || p.Arguments[0].Name != "x" || p.Arguments[0].Required || !p.Arguments[1].Required ||
		p.Completions["x"][1] != "two" || p.Messages[0].Role != "assistant" || p.Messages[0].Text != "hi ${args.x}" ||
		!strings.HasSuffix(p.Messages[1].ImageFile, "/logo.png") || p.Messages[0].Pos.Line != 10 {
		t.Fatalf("prompt %+v", p)
	}
	if got := ExpandArgs("hi ${args.x} and ${args.z}", map[string]string{"x": "X"}); got != "hi X and " {
		t.Fatalf("ExpandArgs: %q", got)
	}
}
