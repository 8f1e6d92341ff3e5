package exchange

import "testing"

func TestCopyIsDeep(t *testing.T) {
	ex := NewWithBody(InOut, map[string]any{"items": []any{map[string]any{"qty": 1}}})
	ex.In().SetHeader("h", "v")
	ex.SetVariable("v", []any{1})
	cp := ex.Copy()
	if cp.ID() == ex.ID() {
		t.Fatal("copy shares the ID")
	}
	cp.In().Body().(map[string]any)["items"].([]any)[0].(map[string]any)["qty"] = 2
	cp.In().SetHeader("h", "changed")
	cp.Variable("v").([]any)[0] = 2
	if ex.In().Body().(map[string]any)["items"].([]any)[0].(map[string]any)["qty"] != 1 {
		t.Fatal("body shared with copy")
	}
	if ex.In().Header("h") != "v" || ex.Variable("v").([]any)[0] != 1 {
		t.Fatal("headers or variables shared with copy")
	}
}

func TestStringify(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{nil, ""}, {"s", "s"}, {[]byte("b"), "b"}, {20.0, "20"}, {2.5, "2.5"}, {true, "true"},
		{map[string]any{"a": 1}, `{"a":1}`}, {[]any{"x"}, `["x"]`},
	}
	for _, c := range cases {
		if got := Stringify(c.in); got != c.want {
			t.Errorf("%#v: %q want %q", c.in, got, c.want)
		}
	}
}

func TestSetHeaderNilRemoves(t *testing.T) {
	m := newMessage(nil)
	m.SetHeader("a", 1)
	m.SetHeader("a", nil)
	if _, ok := m.Headers()["a"]; ok {
		t.Fatal("nil value did not remove the header")
	}
}
