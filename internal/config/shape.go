package config

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// Type is the kind of value a [Shape] accepts.
type Type int

// The value types of a Shape. Scalars (string … URI) accept ${env:NAME} too: it is
// resolved before decoding.
const (
	TypeAny      Type = iota // any YAML value; the owner decodes the node itself
	TypeString               // a string; numbers and booleans are taken as written
	TypeInt                  // an integer
	TypeNumber               // a number
	TypeBool                 // true/false (also yes/no, on/off)
	TypeDuration             // a Go duration (30s, 5m) or a number of milliseconds
	TypeByteSize             // a number of bytes or a size such as 64MiB
	TypeStarlang             // a Starlang script, compiled by the step that owns it
	TypeURI                  // an endpoint URI (scheme://…)
	TypeObject               // a mapping with the declared Keys; other keys are errors
	TypeMap                  // a mapping with free keys whose values are Values
	TypeList                 // a list of Items
	TypeSteps                // a step list (- kind: value)
	TypeInt64                // a 64-bit integer (an advisory lock key), where TypeInt stops at 32 bits
)

// Shape declares what a YAML value may be. One declaration serves decoding
// ([Decoder.Decode]: unknown keys, wrong types, missing keys and values outside Enum
// are errors with positions) and the JSON Schema of the YAML file ([Shape.JSONSchema]).
// Step kinds declare their shape in internal/step; the rest of the file is described by
// running its decoder in describe mode ([DescribeFile]).
//
// A Shape is a plain value, built once (usually in a package-level variable) and only
// read afterwards, so it is safe for concurrent use.
type Shape struct {
	Type        Type
	Description string
	// What names the value in error messages ("a log step", "multicast strategy").
	What string
	// Default is the value used when the key is absent (documentation and Values
	// getters).
	Default any
	// Enum lists the accepted values of a string, matched case-insensitively.
	Enum []string
	// Min and Max, when set, bound an integer or a number (inclusive): the decoder
	// reports a value outside them and the JSON Schema says minimum and maximum.
	// [Bound] makes the pointer.
	Min, Max *float64
	// Keys are the keys of an object, in the order documentation shows them.
	Keys []Key
	// Short names the key that a value other than a mapping stands for: with Short
	// "message", `log: "hi"` means `log: {message: "hi"}`.
	Short string
	// Items is the shape of the elements of a list.
	Items *Shape
	// Values is the shape of the values of a map.
	Values *Shape
	// URIScheme and URIOptions describe a TypeURI value that is not an endpoint (a
	// pipeline source): the one scheme it takes and the options of its query,
	// which the JSON Schema checks instead of an endpoint URI's (any registered
	// scheme, with its component's options).
	URIScheme  string
	URIOptions []string
	// AnyOf lists alternative shapes (describe mode finds them: a trigger is a URI
	// or a mapping {uri: …}).
	AnyOf []*Shape

	pending *slot // describe mode: the probes this shape is computed from
}

// Key is one key of an object shape.
type Key struct {
	Name     string
	Required bool
	Shape
}

// Key returns the declared key called name, or nil.
func (s *Shape) Key(name string) *Key {
	for i := range s.Keys {
		if s.Keys[i].Name == name {
			return &s.Keys[i]
		}
	}
	return nil
}

// KeyNames lists the declared keys in declaration order.
func (s *Shape) KeyNames() []string {
	out := make([]string, len(s.Keys))
	for i, k := range s.Keys {
		out[i] = k.Name
	}
	return out
}

// Value is one decoded value: the node it came from, its path and the decoded Go
// value (string, int, float64, bool, time.Duration, int64 for sizes, []StepConfig,
// *Values for objects, []any for lists, []Pair in document order for maps, nil for
// TypeAny).
type Value struct {
	Node *yaml.Node
	Path string
	V    any
}

// Values are the keys found in a mapping decoded with [Decoder.Decode]. Getters of
// absent keys return the key's declared Default (or the zero value); a getter of the
// wrong type returns the zero value.
type Values struct {
	// Node is the decoded node (the mapping, or the scalar of a short form).
	Node  *yaml.Node
	Path  string
	shape *Shape
	vals  map[string]*Value
}

// Has reports whether key was written.
func (vs *Values) Has(key string) bool { return vs.Get(key) != nil }

// Get returns what was written for key, nil when it was not.
func (vs *Values) Get(key string) *Value {
	if vs == nil {
		return nil
	}
	vs.mustDeclare(key)
	return vs.vals[key]
}

// mustDeclare catches code that reads a key its shape does not declare: such a read
// is always nil or zero, so a misspelt name would silently lose the user's value.
// In test binaries (testing.Testing) it panics, naming the key and the shape, so
// every test that decodes the value finds the mistake; a released binary keeps the
// zero value rather than crash on a configuration.
func (vs *Values) mustDeclare(key string) {
	if vs.shape == nil || len(vs.shape.Keys) == 0 || vs.shape.Key(key) != nil || !testing.Testing() {
		return
	}
	panic(fmt.Sprintf("config: code reads key %q of %s, which its shape does not declare (declared: %s)",
		key, vs.Path, strings.Join(vs.shape.KeyNames(), ", ")))
}

// NodeOf returns the value node of key (nil when absent).
func (vs *Values) NodeOf(key string) *yaml.Node {
	if v := vs.Get(key); v != nil {
		return v.Node
	}
	return nil
}

// PathOf returns the path of key's value (written or not).
func (vs *Values) PathOf(key string) string {
	if v := vs.Get(key); v != nil {
		return v.Path
	}
	if vs == nil {
		return key
	}
	return KeyPath(vs.Path, key)
}

func (vs *Values) raw(key string) any {
	if v := vs.Get(key); v != nil {
		return v.V
	}
	if vs != nil && vs.shape != nil {
		if k := vs.shape.Key(key); k != nil {
			return k.Default
		}
	}
	return nil
}

// String returns a string key.
func (vs *Values) String(key string) string { s, _ := vs.raw(key).(string); return s }

// Int returns an integer key.
func (vs *Values) Int(key string) int { i, _ := vs.raw(key).(int); return i }

// Int64 returns a TypeInt64 key.
func (vs *Values) Int64(key string) int64 { i, _ := vs.raw(key).(int64); return i }

// Float returns a number key.
func (vs *Values) Float(key string) float64 {
	switch v := vs.raw(key).(type) {
	case float64:
		return v
	case int:
		return float64(v)
	}
	return 0
}

// Bool returns a boolean key.
func (vs *Values) Bool(key string) bool { b, _ := vs.raw(key).(bool); return b }

// ByteSize returns a TypeByteSize value (0 when absent).
func (vs *Values) ByteSize(key string) int64 { n, _ := vs.raw(key).(int64); return n }

// Duration returns a duration key.
func (vs *Values) Duration(key string) time.Duration {
	switch v := vs.raw(key).(type) {
	case time.Duration:
		return v
	case string: // a default written as text
		d, _ := time.ParseDuration(v)
		return d
	}
	return 0
}

// Steps returns a step-list key.
func (vs *Values) Steps(key string) []StepConfig { s, _ := vs.raw(key).([]StepConfig); return s }

// Pairs returns the entries of a map key in document order.
func (vs *Values) Pairs(key string) []Pair { p, _ := vs.raw(key).([]Pair); return p }

// Object returns an object key (nil when absent).
func (vs *Values) Object(key string) *Values { o, _ := vs.raw(key).(*Values); return o }

// Objects returns a list-of-objects key; items that were not mappings are left out.
func (vs *Values) Objects(key string) []*Values {
	l, _ := vs.raw(key).([]any)
	out := make([]*Values, 0, len(l))
	for _, it := range l {
		if o, ok := it.(*Values); ok {
			out = append(out, o)
		}
	}
	return out
}

// Decode reads n as s declares, recording every problem in d: for an object,
// unknown keys (with did-you-mean), missing required keys, values of the wrong type
// and strings outside Enum. what names n in messages when s.What is empty. The
// result is never nil; keys that failed to decode are absent from it.
func (d *Decoder) Decode(n *yaml.Node, path, what string, s *Shape) *Values {
	if s.What != "" {
		what = s.What
	}
	vs := &Values{Node: n, Path: path, shape: s, vals: map[string]*Value{}}
	if d.desc != nil {
		d.describeShape(n, s)
		return vs
	}
	if s.Type != TypeObject {
		vs.vals[""] = &Value{Node: n, Path: path, V: d.decodeValue(n, path, what, s)}
		return vs
	}
	n = d.Resolve(n)
	vs.Node = n
	if s.Short != "" && !IsNull(n) && n.Kind != yaml.MappingNode {
		// A free-form key (set-body's constant) takes only a scalar in the short form.
		if k := s.Key(s.Short); k != nil && (k.Type != TypeAny || n.Kind == yaml.ScalarNode) {
			vs.vals[k.Name] = &Value{Node: n, Path: path, V: d.decodeValue(n, path, k.Name, &k.Shape)}
			for _, o := range s.Keys {
				if o.Required && o.Name != k.Name {
					d.Errorf(n, path, "%s is missing required key %q", what, o.Name).Hint =
						"write it as a mapping: " + k.Name + ": …, " + o.Name + ": …"
				}
			}
			return vs
		}
	}
	fields := make(Fields, len(s.Keys))
	var required []string
	for i := range s.Keys {
		k := &s.Keys[i]
		fields[k.Name] = func(v *yaml.Node, p string) {
			vs.vals[k.Name] = &Value{Node: v, Path: p, V: d.decodeValue(v, p, k.Name, &k.Shape)}
		}
		if k.Required {
			required = append(required, k.Name)
		}
	}
	d.Mapping(n, path, what, fields, required...)
	return vs
}

// decodeValue decodes one value of shape s; name is the key it belongs to.
func (d *Decoder) decodeValue(n *yaml.Node, path, name string, s *Shape) any {
	what := s.What
	if what == "" {
		what = name
	}
	switch s.Type {
	case TypeString, TypeStarlang, TypeURI:
		v := d.String(n, path)
		if len(s.Enum) > 0 && v != "" {
			for _, e := range s.Enum {
				if strings.EqualFold(v, e) {
					return e
				}
			}
			d.Errorf(n, path, "unknown %s %q", what, v).Hint = hintOr(DidYouMean(v, s.Enum), "use "+orList(s.Enum))
		}
		return v
	case TypeInt:
		before := len(d.errs)
		v := d.Int(n, path)
		if len(d.errs) == before {
			d.checkBounds(n, path, what, float64(v), s)
		}
		return v
	case TypeInt64:
		before := len(d.errs)
		v := d.Int64(n, path)
		if len(d.errs) == before {
			d.checkBounds(n, path, what, float64(v), s)
		}
		return v
	case TypeNumber:
		before := len(d.errs)
		v := d.Float(n, path)
		if len(d.errs) == before {
			d.checkBounds(n, path, what, v, s)
		}
		return v
	case TypeBool:
		return d.Bool(n, path)
	case TypeDuration:
		return d.Duration(n, path)
	case TypeByteSize:
		return d.ByteSize(n, path)
	case TypeSteps:
		return d.Steps(n, path)
	case TypeObject:
		return d.Decode(n, path, what, s)
	case TypeList:
		items, _ := d.Sequence(n, path, what)
		out := make([]any, 0, len(items))
		for i, it := range items {
			if s.Items == nil {
				out = append(out, nil)
				continue
			}
			out = append(out, d.decodeValue(it, IndexPath(path, i), name, s.Items))
		}
		return out
	case TypeMap:
		pairs, _ := d.Pairs(n, path, what)
		for _, p := range pairs {
			if s.Values != nil {
				d.decodeValue(p.Value, KeyPath(path, p.Key), p.Key, s.Values)
			}
		}
		return pairs
	}
	return nil // TypeAny: the owner reads the node
}

// Bound returns a pointer to v, for [Shape.Min] and [Shape.Max].
func Bound(v float64) *float64 { return &v }

// checkBounds reports a written number outside s.Min and s.Max.
func (d *Decoder) checkBounds(n *yaml.Node, path, what string, v float64, s *Shape) {
	if d.desc != nil || IsNull(d.Resolve(n)) {
		return
	}
	switch {
	case s.Min != nil && v < *s.Min:
		d.Errorf(n, path, "%s must be at least %g, not %g", what, *s.Min, v)
	case s.Max != nil && v > *s.Max:
		d.Errorf(n, path, "%s must be at most %g, not %g", what, *s.Max, v)
	}
}

// orList renders "a", "a or b", "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
