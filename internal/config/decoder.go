package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// maxAliasExpansions bounds how many times one decoder follows YAML aliases, so that a
// "billion laughs" document cannot make decoding explode.
const maxAliasExpansions = 10000

// Decoder reads YAML nodes strictly: unknown keys, wrong types and missing required
// keys are recorded as *Error with the node's position, and decoding goes on so that
// every problem is reported at once. internal/step uses it to decode step bodies.
// A Decoder is not safe for concurrent use.
type Decoder struct {
	file     string
	errs     Errors
	warnings Errors
	aliases  int
	// raw keeps the text of scalars whose ${env:…} references were resolved.
	raw map[*yaml.Node]string
	// desc is set in describe mode (see DescribeFile).
	desc *describer
}

// NewDecoder returns a decoder whose positions are in file.
func NewDecoder(file string) *Decoder { return &Decoder{file: file} }

// keepRaw records n's text before ${env:…} resolution replaces it.
func (d *Decoder) keepRaw(n *yaml.Node) {
	if d.raw == nil {
		d.raw = map[*yaml.Node]string{}
	}
	if _, ok := d.raw[n]; !ok {
		d.raw[n] = n.Value
	}
}

// Raw is the text of scalar n as written in the file, before ${env:…} resolution;
// "" for nil and non-scalar nodes.
func (d *Decoder) Raw(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	if r, ok := d.raw[n]; ok {
		return r
	}
	return n.Value
}

// File is the file name used in positions.
func (d *Decoder) File() string { return d.file }

// Pos returns the position of n.
func (d *Decoder) Pos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: d.file}
	}
	return Pos{File: d.file, Line: n.Line, Col: n.Column}
}

// Errorf records an error at n and returns it so that the caller can add a Hint.
func (d *Decoder) Errorf(n *yaml.Node, path, format string, args ...any) *Error {
	e := &Error{Pos: d.Pos(n), Path: path, Msg: fmt.Sprintf(format, args...)}
	d.errs = append(d.errs, e)
	return e
}

// Add records errors found elsewhere (a nested decoder, a compiler).
func (d *Decoder) Add(es ...*Error) { d.errs = append(d.errs, es...) }

// Warn records a non-fatal finding at n.
func (d *Decoder) Warn(n *yaml.Node, path, format string, args ...any) *Error {
	e := &Error{Pos: d.Pos(n), Path: path, Msg: fmt.Sprintf(format, args...)}
	d.warnings = append(d.warnings, e)
	return e
}

// Warnings returns the recorded warnings.
func (d *Decoder) Warnings() Errors { return d.warnings }

// Errors returns what was recorded so far.
func (d *Decoder) Errors() Errors { return d.errs }

// Err returns the recorded errors as an error, nil when there are none.
func (d *Decoder) Err() error { return d.errs.Err() }

// Resolve follows aliases (*anchor) to the node they name. It returns nil, after
// recording an error, when the document uses more aliases than a sane config needs.
func (d *Decoder) Resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		d.aliases++
		if d.aliases == maxAliasExpansions {
			d.Errorf(n, "", "too many YAML alias expansions (more than %d)", maxAliasExpansions)
		}
		if d.aliases >= maxAliasExpansions {
			return nil
		}
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return d.Resolve(n.Content[0])
	}
	return n
}

// IsNull reports whether n is absent or an explicit YAML null (`key:` with no value).
func IsNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// Fields maps the keys a mapping accepts to the functions that decode their values.
// The function receives the value node (aliases resolved) and the value's path.
type Fields map[string]func(v *yaml.Node, path string)

// KeyPath joins a parent path and a key: ("workflows[0]", "id") → "workflows[0].id".
func KeyPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// IndexPath joins a path and an index: ("steps", 2) → "steps[2]".
func IndexPath(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// Pair is one key/value of a mapping, aliases and merge keys (<<) resolved.
type Pair struct {
	Key   string
	KeyN  *yaml.Node
	Value *yaml.Node
}

// Pairs returns the entries of mapping n in document order, with `<<: *anchor` merges
// expanded (explicit keys win) and duplicate keys reported. It records an error and
// returns ok=false when n is not a mapping; a null node is an empty mapping.
func (d *Decoder) Pairs(n *yaml.Node, path, what string) (pairs []Pair, ok bool) {
	if d.desc != nil {
		vals, ok := d.describeChildren(n, yaml.MappingNode, what)
		for _, v := range vals {
			pairs = append(pairs, Pair{Key: "*", KeyN: &yaml.Node{Kind: yaml.ScalarNode, Value: "*"}, Value: v})
		}
		return pairs, ok
	}
	n = d.Resolve(n)
	if IsNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, "%s must be a mapping (key: value), not %s", what, describe(n))
		return nil, false
	}
	seen := map[string]*yaml.Node{}
	var merged []Pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.Errorf(k, path, "keys must be plain strings, not %s", describe(k))
			continue
		}
		if k.Value == "<<" && k.Tag == "!!merge" {
			merged = append(merged, d.mergePairs(v, path)...)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.Errorf(k, path, "duplicate key %q (first at line %d)", k.Value, first.Line)
			continue
		}
		seen[k.Value] = k
		pairs = append(pairs, Pair{Key: k.Value, KeyN: k, Value: d.Resolve(v)})
	}
	for _, p := range merged {
		if _, dup := seen[p.Key]; !dup {
			seen[p.Key] = p.KeyN
			pairs = append(pairs, p)
		}
	}
	return pairs, true
}

func (d *Decoder) mergePairs(v *yaml.Node, path string) []Pair {
	v = d.Resolve(v)
	if v == nil {
		return nil
	}
	var out []Pair
	switch v.Kind {
	case yaml.MappingNode:
		ps, _ := d.Pairs(v, path, "a merged value (<<)")
		out = append(out, ps...)
	case yaml.SequenceNode:
		for _, item := range v.Content {
			out = append(out, d.mergePairs(item, path)...)
		}
	default:
		d.Errorf(v, path, "a merge key (<<) needs a mapping or a list of mappings")
	}
	return out
}

// Mapping decodes mapping n: each key's value goes to its function in fields; unknown
// keys are errors with a did-you-mean hint; keys listed in required must be present.
// It returns false when n is not a mapping.
func (d *Decoder) Mapping(n *yaml.Node, path, what string, fields Fields, required ...string) bool {
	if d.desc != nil {
		return d.describeMapping(n, path, what, fields, required)
	}
	pairs, ok := d.Pairs(n, path, what)
	if !ok {
		return false
	}
	present := map[string]bool{}
	for _, p := range pairs {
		fn, known := fields[p.Key]
		if cur, former := renamedKey(d, fields, p, path); former {
			p.Key, fn, known = cur, fields[cur], true
		}
		if !known {
			e := d.Errorf(p.KeyN, path, "unknown key %q in %s", p.Key, what)
			e.Hint = DidYouMean(p.Key, keysOf(fields))
			if e.Hint == "" {
				e.Hint = "known keys: " + strings.Join(keysOf(fields), ", ")
			}
			continue
		}
		if present[p.Key] { // only a key and its former spelling get here
			d.Errorf(p.KeyN, path, "%s is written twice, once in its former spelling", p.Key).Hint = "keep only " + p.Key
			continue
		}
		present[p.Key] = true
		if fn != nil {
			fn(p.Value, KeyPath(path, p.Key))
		}
	}
	for _, r := range required {
		if !present[r] {
			at := d.Resolve(n)
			d.Errorf(at, path, "%s is missing required key %q", what, r)
		}
	}
	return true
}

func keysOf(f Fields) []string {
	out := make([]string, 0, len(f))
	for k := range f {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// describe names a node's shape for error messages.
func describe(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unsupported YAML node"
}

// String decodes a scalar as a string; null gives "". Numbers and booleans are taken
// as written (version: 1.0 is "1.0").
func (d *Decoder) String(n *yaml.Node, path string) string {
	if d.describeScalar(n, TypeString) {
		return ""
	}
	n = d.Resolve(n)
	if IsNull(n) {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		d.Errorf(n, path, "want a string, not %s", describe(n))
		return ""
	}
	return n.Value
}

// Int decodes an integer scalar.
func (d *Decoder) Int(n *yaml.Node, path string) int {
	v := d.Int64(n, path)
	if v > math.MaxInt32 || v < math.MinInt32 {
		d.Errorf(n, path, "integer %d is out of range", v)
		return 0
	}
	return int(v)
}

// Int64 decodes an integer scalar.
func (d *Decoder) Int64(n *yaml.Node, path string) int64 {
	if d.describeScalar(n, TypeInt) {
		return 0
	}
	n = d.Resolve(n)
	if IsNull(n) {
		return 0
	}
	if n.Kind == yaml.ScalarNode {
		s := strings.ReplaceAll(n.Value, "_", "")
		if v, err := strconv.ParseInt(s, 0, 64); err == nil {
			return v
		}
	}
	d.Errorf(n, path, "want an integer, not %s", describe(n))
	return 0
}

// Float decodes a number scalar.
func (d *Decoder) Float(n *yaml.Node, path string) float64 {
	if d.describeScalar(n, TypeNumber) {
		return 0
	}
	n = d.Resolve(n)
	if IsNull(n) {
		return 0
	}
	if n.Kind == yaml.ScalarNode {
		if v, err := strconv.ParseFloat(n.Value, 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return v
		}
	}
	d.Errorf(n, path, "want a number, not %s", describe(n))
	return 0
}

// Bool decodes true/false (also yes/no, on/off).
func (d *Decoder) Bool(n *yaml.Node, path string) bool {
	if d.describeScalar(n, TypeBool) {
		return false
	}
	n = d.Resolve(n)
	if IsNull(n) {
		return false
	}
	if n.Kind == yaml.ScalarNode {
		switch strings.ToLower(n.Value) {
		case "true", "yes", "on":
			return true
		case "false", "no", "off":
			return false
		}
	}
	d.Errorf(n, path, "want true or false, not %s", describe(n))
	return false
}

// Duration decodes "30s", "5m", "1h30m" or a bare number of milliseconds.
func (d *Decoder) Duration(n *yaml.Node, path string) time.Duration {
	if d.describeScalar(n, TypeDuration) {
		return 0
	}
	n = d.Resolve(n)
	if IsNull(n) {
		return 0
	}
	if n.Kind == yaml.ScalarNode {
		if v, err := time.ParseDuration(n.Value); err == nil && v >= 0 {
			return v
		}
		if ms, err := strconv.ParseInt(n.Value, 10, 64); err == nil && ms >= 0 && ms < math.MaxInt64/int64(time.Millisecond) {
			return time.Duration(ms) * time.Millisecond
		}
	}
	e := d.Errorf(n, path, "want a duration, not %s", describe(n))
	e.Hint = "use a Go duration such as 500ms, 30s, 5m or 1h"
	return 0
}

// Strings decodes a list of scalars; a single scalar is a one-element list.
func (d *Decoder) Strings(n *yaml.Node, path string) []string {
	if d.desc != nil {
		if p := d.probe(n); p != nil && p.kind == yaml.SequenceNode {
			p.shapes = append(p.shapes, &Shape{Type: TypeList, Items: &Shape{Type: TypeString}})
		} else {
			d.describeScalar(n, TypeString)
		}
		return nil
	}
	n = d.Resolve(n)
	if IsNull(n) {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, path, "want a list of strings, not %s", describe(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		out = append(out, d.String(item, IndexPath(path, i)))
	}
	return out
}

// Sequence returns the items of a list (aliases resolved); null is an empty list.
func (d *Decoder) Sequence(n *yaml.Node, path, what string) ([]*yaml.Node, bool) {
	if d.desc != nil {
		return d.describeChildren(n, yaml.SequenceNode, what)
	}
	n = d.Resolve(n)
	if IsNull(n) {
		return nil, true
	}
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, path, "%s must be a list (- item), not %s", what, describe(n))
		return nil, false
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, item := range n.Content {
		if r := d.Resolve(item); r != nil {
			out = append(out, r)
		}
	}
	return out, true
}

// Value decodes any YAML value into plain Go data (map[string]any, []any, string,
// int, float64, bool, nil), the shapes exchange bodies use.
func (d *Decoder) Value(n *yaml.Node, path string) any {
	if p := d.probe(n); p != nil {
		p.shapes = append(p.shapes, &Shape{Type: TypeAny})
		return nil
	}
	n = d.Resolve(n)
	if IsNull(n) {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		pairs, _ := d.Pairs(n, path, "the value")
		m := make(map[string]any, len(pairs))
		for _, p := range pairs {
			m[p.Key] = d.Value(p.Value, KeyPath(path, p.Key))
		}
		return m
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			out = append(out, d.Value(item, IndexPath(path, i)))
		}
		return out
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int":
			if v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
				return int(v)
			}
		case "!!float":
			if v, err := strconv.ParseFloat(n.Value, 64); err == nil {
				return v
			}
		case "!!bool":
			return d.Bool(n, path)
		}
		return n.Value
	}
	return nil
}

// Steps decodes a list of steps: each item is a one-key mapping whose key is the step
// kind (`- transform: {...}`). Used for workflow, tool and nested (choice, multicast)
// step lists.
func (d *Decoder) Steps(n *yaml.Node, path string) []StepConfig {
	if d.desc != nil {
		d.describeAs(n, yaml.SequenceNode, &Shape{Type: TypeSteps})
		return nil
	}
	items, ok := d.Sequence(n, path, "steps")
	if !ok {
		return nil
	}
	out := make([]StepConfig, 0, len(items))
	for i, item := range items {
		ip := IndexPath(path, i)
		if item.Kind != yaml.MappingNode || len(item.Content) != 2 {
			e := d.Errorf(item, ip, "a step must be a mapping with exactly one key, the step kind")
			e.Hint = "for example `- log: {message: \"hi\"}` or `- target: direct://next`"
			continue
		}
		k := item.Content[0]
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			d.Errorf(k, ip, "a step kind must be a name such as transform or target")
			continue
		}
		out = append(out, StepConfig{
			Kind: k.Value,
			Pos:  d.Pos(k),
			Path: ip,
			Node: d.Resolve(item.Content[1]),
		})
	}
	return out
}
