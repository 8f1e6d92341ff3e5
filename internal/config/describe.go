package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Describe mode. The settings of the YAML file (helix:, workflows:, tools:, mcps: …)
// are declared by their decoder functions in this package: a Fields map gives a
// mapping's keys and the accessors the value functions call (String, Duration,
// Sequence, Mapping, Steps …) give the types. Instead of repeating all of that in a
// second, hand-written declaration that would drift, DescribeFile runs the decoder
// on probe nodes and records what it asks for. Every value function is run three
// times — with a scalar, a mapping and a list probe — and the kinds it accepts become
// the alternatives of the value (a trigger is a URI or a mapping {uri: …}). A probe
// that no accessor reads counts as accepted: a string, a free mapping or a free list.
//
// Decoders keep working unchanged in describe mode as long as they read values
// through the Decoder (String, URI, Keyword …) and do not let one call of a value
// function change what the next one reads (a "seen" flag shared by two keys must be
// set after the value is decoded); error checks run on zero values and are ignored.
// [Decoder.Doc] adds a description or the accepted strings; settingDocs holds the
// rest of the descriptions. TestDescribeFileHasNoBlindSpots finds values that come
// out as "anything".

// describer holds the probes of one DescribeFile run.
type describer struct {
	probes map[*yaml.Node]*probe
	// stack lists the mappings (by `what`) being described, so that recursive
	// shapes (a tool field's properties are fields) end in a free mapping.
	stack []string
}

// probe is one node handed to a value function, and what the decoder asked of it.
type probe struct {
	kind     yaml.Kind
	rejected bool
	shapes   []*Shape
	doc      string
	enum     []string
}

// slot is one value position: the probes of each kind its function was run with.
type slot struct{ probes []*probe }

var probeKinds = []yaml.Kind{yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode}

func (ds *describer) newProbe(kind yaml.Kind) (*yaml.Node, *probe) {
	n := &yaml.Node{Kind: kind}
	if kind == yaml.ScalarNode {
		n.Tag = "!!str"
	}
	p := &probe{kind: kind}
	ds.probes[n] = p
	return n, p
}

// run calls fn with a probe of each kind; a nil fn accepts anything.
func (ds *describer) run(fn func(n *yaml.Node)) *slot {
	s := &slot{}
	for _, k := range probeKinds {
		n, p := ds.newProbe(k)
		s.probes = append(s.probes, p)
		if fn != nil {
			fn(n)
		}
	}
	return s
}

// probe returns the probe behind n, nil when n is not one.
func (d *Decoder) probe(n *yaml.Node) *probe {
	if d.desc == nil {
		return nil
	}
	return d.desc.probes[n]
}

// describeScalar records that n is read as a scalar of type t. It reports whether
// the decoder is in describe mode; the caller then returns a zero value.
func (d *Decoder) describeScalar(n *yaml.Node, t Type) bool {
	if d.desc == nil {
		return false
	}
	if p := d.probe(n); p != nil {
		if p.kind != yaml.ScalarNode {
			p.rejected = true
		} else {
			p.shapes = append(p.shapes, &Shape{Type: t})
		}
	}
	return true
}

// describeAs records shape for n when n's probe has kind; any other probe is
// rejected. It reports whether n is a probe of that kind.
func (d *Decoder) describeAs(n *yaml.Node, kind yaml.Kind, shape *Shape) bool {
	p := d.probe(n)
	if p == nil {
		return false
	}
	if p.kind != kind {
		p.rejected = true
		return false
	}
	p.shapes = append(p.shapes, shape)
	return true
}

func (d *Decoder) describeMapping(n *yaml.Node, path, what string, fields Fields, required []string) bool {
	p := d.probe(n)
	if p == nil || p.kind != yaml.MappingNode {
		if p != nil {
			p.rejected = true
		}
		return false
	}
	ds := d.desc
	if slices.Contains(ds.stack, what) {
		p.shapes = append(p.shapes, &Shape{Type: TypeMap, What: what})
		return true
	}
	ds.stack = append(ds.stack, what)
	defer func() { ds.stack = ds.stack[:len(ds.stack)-1] }()
	sh := &Shape{Type: TypeObject, What: what}
	for _, name := range keysOf(fields) {
		fn, kp := fields[name], KeyPath(path, name)
		var call func(*yaml.Node)
		if fn != nil {
			call = func(v *yaml.Node) { fn(v, kp) }
		}
		sh.Keys = append(sh.Keys, Key{Name: name, Required: slices.Contains(required, name),
			Shape: Shape{Description: settingDocs[what+"."+name], pending: ds.run(call)}})
	}
	p.shapes = append(p.shapes, sh)
	return true
}

// describeChildren records a map or list at n and returns one probe child of
// each kind for the caller to decode.
func (d *Decoder) describeChildren(n *yaml.Node, kind yaml.Kind, what string) ([]*yaml.Node, bool) {
	s := &slot{}
	var children []*yaml.Node
	for _, k := range probeKinds {
		c, p := d.desc.newProbe(k)
		s.probes = append(s.probes, p)
		children = append(children, c)
	}
	sh := &Shape{Type: TypeList, What: what, Items: &Shape{pending: s}}
	if kind == yaml.MappingNode {
		sh = &Shape{Type: TypeMap, What: what, Values: &Shape{pending: s}}
	}
	if !d.describeAs(n, kind, sh) {
		return nil, false
	}
	return children, true
}

// Doc gives the value n a description in the JSON Schema of the file and, when
// enum is not empty, the strings it accepts (the decoder function checks them
// itself). Decoder functions call it with the value node; outside describe mode it
// does nothing.
func (d *Decoder) Doc(n *yaml.Node, text string, enum ...string) {
	if p := d.probe(n); p != nil {
		if text != "" {
			p.doc = text
		}
		if len(enum) > 0 {
			p.enum = enum
		}
	}
}

// URI decodes an endpoint URI: a string, which the JSON Schema of the file checks
// against the known schemes.
func (d *Decoder) URI(n *yaml.Node, path string) string {
	if d.describeScalar(n, TypeURI) {
		return ""
	}
	return d.String(n, path)
}

// Keyword reports whether scalar n is one of words (case-insensitive), such as `off`
// for a limit that is otherwise a number. In describe mode it records the words as
// an alternative of the value.
func (d *Decoder) Keyword(n *yaml.Node, words ...string) (string, bool) {
	if d.desc != nil {
		if p := d.probe(n); p != nil && p.kind == yaml.ScalarNode {
			p.shapes = append(p.shapes, &Shape{Type: TypeString, Enum: words})
		}
		return "", false
	}
	n = d.Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return "", false
	}
	for _, w := range words {
		if strings.EqualFold(n.Value, w) {
			return w, true
		}
	}
	return "", false
}

// describeShape records a declared shape for n (a decoder that reads its value with
// [Decoder.Decode] declares it whole, descriptions and enums included): the probe
// of the kind the shape reads accepts it, the others are rejected. An object with
// a Short key is recorded on the mapping probe only; the JSON Schema renders its
// short form itself.
func (d *Decoder) describeShape(n *yaml.Node, s *Shape) {
	p := d.probe(n)
	if p == nil {
		return
	}
	kind := yaml.ScalarNode
	switch s.Type {
	case TypeObject, TypeMap:
		kind = yaml.MappingNode
	case TypeList, TypeSteps:
		kind = yaml.SequenceNode
	}
	if p.kind != kind {
		p.rejected = true
		return
	}
	p.shapes = append(p.shapes, s)
}

// describeValue returns the shape of the values fn decodes, found by running it in
// describe mode: a hand-written decoder (tool fields, a trigger) can so be part of
// a declared [Shape].
func describeValue(fn func(d *Decoder, n *yaml.Node)) *Shape {
	d := NewDecoder("helix.yaml")
	d.desc = &describer{probes: map[*yaml.Node]*probe{}}
	s := d.desc.run(func(n *yaml.Node) { fn(d, n) })
	return d.desc.finalize(s)
}

// finalize computes the shape of a slot from its probes.
func (ds *describer) finalize(s *slot) *Shape {
	var alts []*Shape
	implicit, doc := 0, ""
	for _, p := range s.probes {
		if p.doc != "" {
			doc = p.doc
		}
		if p.rejected {
			continue
		}
		if len(p.shapes) == 0 {
			implicit++
			alts = append(alts, implicitShape(p.kind))
			continue
		}
		for _, sh := range p.shapes {
			sh = ds.finalizeShape(sh)
			if len(p.enum) > 0 && sh.Type == TypeString && len(sh.Enum) == 0 {
				sh.Enum = p.enum
			}
			alts = appendAlt(alts, sh)
		}
	}
	var out *Shape
	switch {
	case implicit == len(s.probes) || len(alts) == 0:
		out = &Shape{Type: TypeAny}
	case len(alts) == 1:
		out = alts[0]
	default:
		out = &Shape{Type: TypeAny, AnyOf: alts}
	}
	if doc != "" {
		out.Description = doc
	}
	return out
}

func appendAlt(alts []*Shape, sh *Shape) []*Shape {
	if sh.Type == TypeAny && len(sh.AnyOf) > 0 && sh.Description == "" {
		for _, a := range sh.AnyOf {
			alts = appendAlt(alts, a)
		}
		return alts
	}
	for _, a := range alts {
		if reflect.DeepEqual(a, sh) {
			return alts
		}
	}
	return append(alts, sh)
}

// finalizeShape replaces the pending parts of sh (keys, items, values) by the
// shapes their probes recorded.
func (ds *describer) finalizeShape(sh *Shape) *Shape {
	if sh.pending != nil {
		out := ds.finalize(sh.pending)
		if out.Description == "" {
			out.Description = sh.Description
		}
		return out
	}
	out := *sh
	out.Keys = nil
	for _, k := range sh.Keys {
		fk := Key{Name: k.Name, Required: k.Required, Shape: *ds.finalizeShape(&k.Shape)}
		out.Keys = append(out.Keys, fk)
	}
	if sh.Items != nil {
		out.Items = ds.finalizeShape(sh.Items)
	}
	if sh.Values != nil {
		out.Values = ds.finalizeShape(sh.Values)
	}
	return &out
}

func implicitShape(k yaml.Kind) *Shape {
	switch k {
	case yaml.MappingNode:
		return &Shape{Type: TypeMap, Values: &Shape{Type: TypeAny}}
	case yaml.SequenceNode:
		return &Shape{Type: TypeList, Items: &Shape{Type: TypeAny}}
	}
	return &Shape{Type: TypeString}
}

// DescribeFile returns the shape of a Helix YAML file as this package's decoder reads
// it (see the describe-mode notes above). Step lists are TypeSteps: the step kinds
// live in internal/step and declare their own shapes.
func DescribeFile() (sh *Shape, err error) {
	d := NewDecoder("helix.yaml")
	d.desc = &describer{probes: map[*yaml.Node]*probe{}}
	defer func() {
		if r := recover(); r != nil {
			sh, err = nil, fmt.Errorf("describe the configuration file: a decoder failed on a probe value: %v", r)
		}
	}()
	c := &Config{}
	s := d.desc.run(func(n *yaml.Node) { c.decodeDocument(d, n) })
	return d.desc.finalize(s), nil
}
