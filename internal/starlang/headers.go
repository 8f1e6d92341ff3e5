package starlang

import (
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// headerDict is the `headers` value: a dict whose lookups (headers["X"],
// headers.get("x"), "x" in headers) ignore case, as HTTP header names do, and fall
// back to a case-insensitive match only when the exact name is absent (as header()
// does). Keys, iteration order, len and the text form are those of the underlying
// dict; it reports its type as "dict" and converts like one.
type headerDict struct {
	d *starlark.Dict
}

var (
	_ starlark.IterableMapping = (*headerDict)(nil)
	_ starlark.HasSetKey       = (*headerDict)(nil)
	_ starlark.HasAttrs        = (*headerDict)(nil)
	_ starlark.Sequence        = (*headerDict)(nil)
	_ starlark.Comparable      = (*headerDict)(nil)
	_ starlark.HasBinary       = (*headerDict)(nil)
)

func newHeaderDict(d *starlark.Dict) *headerDict { return &headerDict{d: d} }

func (h *headerDict) String() string        { return h.d.String() }
func (h *headerDict) Type() string          { return "dict" }
func (h *headerDict) Freeze()               { h.d.Freeze() }
func (h *headerDict) Truth() starlark.Bool  { return h.d.Truth() }
func (h *headerDict) Hash() (uint32, error) { return h.d.Hash() }
func (h *headerDict) Len() int              { return h.d.Len() }
func (h *headerDict) Iterate() starlark.Iterator {
	return h.d.Iterate()
}
func (h *headerDict) Items() []starlark.Tuple { return h.d.Items() }
func (h *headerDict) SetKey(k, v starlark.Value) error {
	return h.d.SetKey(k, v)
}

// Get finds k exactly, then ignoring case when k is a string.
func (h *headerDict) Get(k starlark.Value) (starlark.Value, bool, error) {
	v, found, err := h.d.Get(k)
	if found || err != nil {
		return v, found, err
	}
	name, ok := k.(starlark.String)
	if !ok {
		return nil, false, nil
	}
	for _, item := range h.d.Items() {
		if s, ok := item[0].(starlark.String); ok && strings.EqualFold(string(s), string(name)) {
			return item[1], true, nil
		}
	}
	return nil, false, nil
}

func (h *headerDict) Attr(name string) (starlark.Value, error) {
	if name == "get" {
		return starlark.NewBuiltin("get", h.get).BindReceiver(h), nil
	}
	return h.d.Attr(name)
}

func (h *headerDict) AttrNames() []string { return h.d.AttrNames() }

// get(key, default=None), with Get's case-insensitive lookup.
func (h *headerDict) get(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var key, dflt starlark.Value = nil, starlark.None
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &key, &dflt); err != nil {
		return nil, err
	}
	v, found, err := h.Get(key)
	if err != nil {
		return nil, err
	}
	if !found {
		return dflt, nil
	}
	return v, nil
}

// CompareSameType compares like dicts (== and != only).
func (h *headerDict) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	return starlark.CompareDepth(op, h.d, y.(*headerDict).d, depth)
}

// Binary supports headers | dict and dict | headers, giving a plain dict.
func (h *headerDict) Binary(op syntax.Token, y starlark.Value, side starlark.Side) (starlark.Value, error) {
	if op != syntax.PIPE {
		return nil, nil
	}
	if other, ok := y.(*headerDict); ok {
		y = other.d
	}
	if side == starlark.Left {
		return starlark.Binary(op, h.d, y)
	}
	return starlark.Binary(op, y, h.d)
}
