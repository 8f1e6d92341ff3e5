package step

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Headers the elicit and sample steps set.
const (
	// HeaderElicitAction is the user's answer to an elicit step: accept, decline
	// or cancel.
	HeaderElicitAction = "HelixElicitAction"
	// HeaderSampleModel and HeaderSampleStopReason are the model that answered a
	// sample step and why it stopped (endTurn, maxTokens, stopSequence …).
	HeaderSampleModel      = "HelixSampleModel"
	HeaderSampleStopReason = "HelixSampleStopReason"
)

// defaultAskTimeout bounds the wait for the client when a step sets no timeout:
// a person answering a form may take minutes, but not forever.
const defaultAskTimeout = 10 * time.Minute

func init() {
	Define(Kind{
		Name: "elicit",
		Description: "Asks the user of the MCP client that called the workflow to fill in a form (elicitation/create, form mode) and waits for the answer. " +
			"On accept the answer (an object, checked against the schema, defaults applied) becomes the body, or the variable named by into:; " +
			"header HelixElicitAction is accept, decline or cancel. Works only in workflows called as MCP tools by a client that supports elicitation: " +
			"on a stateful server's session of MCP 2025-11-25 or earlier the server sends the request and waits; on MCP 2026-07-28 the call is answered with the question (an input request) and the client calls again with the answer.",
		Shape: config.Shape{Type: config.TypeObject, What: "an elicit step", Short: "message", Keys: []config.Key{
			{Name: "message", Required: true, Shape: config.Shape{Type: config.TypeString,
				Description: "What the user is asked; ${body.x}, ${header.X} and ${env:NAME} placeholders are resolved."}},
			questionIDKey(),
			{Name: "schema", Shape: config.Shape{Type: config.TypeAny,
				Description: "The form: a JSON Schema object (type: object, properties, required) whose properties are flat: string (format email, uri, date, date-time; minLength, maxLength; enum, enumNames, oneOf of const/title), number, integer (minimum, maximum), boolean, or array of enum strings (items.enum or items.anyOf of const/title) for multi-select; each may have title, description and default. Absent: a form without fields (a confirmation)."}},
			askTimeoutKey(),
			{Name: "on_decline", Shape: config.Shape{Type: config.TypeString, Default: "fail", Enum: []string{"fail", "continue"},
				Description: "What a decline or cancel does: fail the step (\"the user declined …\") or continue with the body unchanged (check header HelixElicitAction)."}},
			askIntoKey("the accepted answer", "the answer becomes"),
			{Name: "before_task", Shape: config.Shape{Type: config.TypeBool, Default: false,
				Description: "In a call of a durable workflow's tool run as an MCP task (2026-07-28, tasks extension), ask this question in the call itself (input-required rounds) before the task is created, instead of parking the task (input_required, answered by tasks/update). " +
					"Only the leading top-level steps of a workflow may say so. Any other call asks it as any elicit: does (a durable run parks on it)."}},
		}},
		Build: buildElicit,
	})
}

// elicitStep asks the calling MCP client's user for a form:
//
//	steps:
//	  - elicit:
//	      message: "Ship order ${body.id}?"
//	      schema:
//	        properties:
//	          confirm: {type: boolean, default: true}
//	        required: [confirm]
type elicitStep struct {
	name string
	askSettings
	message   string
	schema    map[string]any
	continues bool // on_decline: continue
	// beforeTask: asked in the call before its task is created (durable.BeforeTask).
	beforeTask bool
}

var _ ask.Asker = (*elicitStep)(nil)

func buildElicit(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &elicitStep{name: Name(s), message: v.String("message"),
		continues: strings.EqualFold(v.String("on_decline"), "continue")}
	st.askSettings = decodeAskSettings(d, v, st.name, "answer")
	if st.beforeTask = v.Bool("before_task"); st.beforeTask && (bc.depth != 1 || !bc.leading) {
		d.Errorf(v.NodeOf("before_task"), v.PathOf("before_task"), "only the leading top-level steps of a workflow may ask before the task is created").Hint =
			"move this elicit: to the start of the workflow's steps (after any other before_task elicit:), or remove before_task"
	}
	CheckPlaceholders(d, v.NodeOf("message"), v.PathOf("message"), st.message)
	st.schema = map[string]any{"type": "object", "properties": map[string]any{}}
	if sc := v.Get("schema"); sc != nil {
		if m := decodeElicitSchema(d, sc.Node, sc.Path); m != nil {
			st.schema = m
		}
	}
	return st, d.Err()
}

func (e *elicitStep) Name() string     { return e.name }
func (e *elicitStep) AsksClient() bool { return true }

func (e *elicitStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	if r, ok := durable.ResolutionFor(ctx, e.id); ok { // a durable run, answered
		ans, err := e.answerOf(r)
		if err != nil {
			return fmt.Errorf("elicit: %w", err)
		}
		return e.apply(ex, ans, e.message)
	}
	msg, err := uri.Expand(e.message, ex)
	if err != nil {
		return fmt.Errorf("elicit: message: %w", err)
	}
	if _, ok := durable.RunID(ctx); ok { // a durable run parks until the answer comes
		return e.park(msg)
	}
	c := ask.FromContext(ctx)
	if c == nil {
		return fmt.Errorf("elicit: %w", ask.ErrNoClient)
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	ans, err := c.Elicit(ctx, &ask.Elicitation{ID: e.id, Message: msg, Schema: exchange.DeepCopy(e.schema).(map[string]any)})
	if err != nil {
		return fmt.Errorf("elicit: %w", err)
	}
	return e.apply(ex, ans, msg)
}

// apply sets the answer on the exchange (or fails on a decline).
func (e *elicitStep) apply(ex *exchange.Exchange, ans *ask.ElicitAnswer, msg string) error {
	msgIn := ex.In()
	msgIn.SetHeader(HeaderElicitAction, ans.Action)
	if ans.Action != ask.ActionAccept {
		if e.continues {
			return nil
		}
		if ans.Action == ask.ActionCancel {
			return fmt.Errorf("elicit: the user cancelled the request (%q)", msg)
		}
		return fmt.Errorf("elicit: the user declined the request (%q)", msg)
	}
	content := ans.Content
	if content == nil {
		content = map[string]any{}
	}
	e.put(ex, content)
	return nil
}

// elicitTypes are the property types an elicitation form may have (MCP: flat
// primitives, arrays for multi-select enums).
var elicitTypes = []string{"string", "number", "integer", "boolean", "array"}

// elicitFormats are the string formats MCP allows in an elicitation form.
var elicitFormats = []string{"email", "uri", "date", "date-time"}

// decodeElicitSchema reads an elicit step's schema: and checks it against what
// MCP allows in an elicitation form, so that a client never receives a form it must
// refuse. It returns nil after reporting errors.
func decodeElicitSchema(d *config.Decoder, n *yaml.Node, path string) map[string]any {
	n = d.Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		d.Errorf(n, path, "schema: must be a mapping (a JSON Schema object with properties)").Hint = "for example schema: {properties: {name: {type: string}}, required: [name]}"
		return nil
	}
	before := len(d.Errors())
	m, _ := d.Value(n, path).(map[string]any)
	if m == nil {
		return nil
	}
	if t, ok := m["type"]; ok && t != "object" {
		d.Errorf(childNode(d, n, path, "type"), config.KeyPath(path, "type"), "an elicitation schema has type object, not %v", t)
	}
	m["type"] = "object"
	props := map[string]any{}
	if p, ok := m["properties"]; ok {
		pm, isMap := p.(map[string]any)
		pn := childNode(d, n, path, "properties")
		if !isMap {
			d.Errorf(pn, config.KeyPath(path, "properties"), "properties: must map field names to their schemas")
		} else {
			props = pm
			for name, ps := range pm {
				checkElicitProperty(d, childNode(d, pn, config.KeyPath(path, "properties"), name), config.KeyPath(config.KeyPath(path, "properties"), name), name, ps)
			}
		}
	}
	m["properties"] = props
	if r, ok := m["required"]; ok {
		rn := childNode(d, n, path, "required")
		list, isList := r.([]any)
		if !isList {
			d.Errorf(rn, config.KeyPath(path, "required"), "required: must be a list of field names")
		}
		for _, x := range list {
			name, _ := x.(string)
			if _, known := props[name]; !known {
				d.Errorf(rn, config.KeyPath(path, "required"), "required field %v is not among the properties", x).Hint = config.DidYouMean(name, mapKeys(props))
			}
		}
	}
	if len(d.Errors()) > before {
		return nil
	}
	return m
}

// checkElicitProperty checks one field of an elicitation form.
func checkElicitProperty(d *config.Decoder, n *yaml.Node, path, name string, v any) {
	p, ok := v.(map[string]any)
	if !ok {
		d.Errorf(n, path, "field %q: want a mapping such as {type: string, description: …}", name)
		return
	}
	t, _ := p["type"].(string)
	if t == "" {
		if _, titled := p["oneOf"]; titled {
			t = "string"
		} else if _, en := p["enum"]; en {
			t = "string"
		}
	}
	if !slices.Contains(elicitTypes, t) {
		e := d.Errorf(n, path, "field %q: type %v is not allowed in an elicitation form", name, p["type"])
		e.Hint = "use one of " + strings.Join(elicitTypes, ", ")
		return
	}
	if _, nested := p["properties"]; nested {
		d.Errorf(n, path, "field %q: elicitation forms are flat: a field cannot have properties of its own", name)
	}
	if f, ok := p["format"]; ok && (t != "string" || !slices.Contains(elicitFormats, fmt.Sprint(f))) {
		d.Errorf(n, path, "field %q: format %v is not allowed (strings only: %s)", name, f, strings.Join(elicitFormats, ", "))
	}
	enum, hasEnum := p["enum"].([]any)
	if _, ok := p["enum"]; ok && (!hasEnum || len(enum) == 0) {
		d.Errorf(n, path, "field %q: enum must be a non-empty list", name)
	}
	if hasEnum && t != "string" {
		d.Errorf(n, path, "field %q: enum is for strings; a multi-select is {type: array, items: {type: string, enum: […]}}", name)
	}
	if names, ok := p["enumNames"]; ok {
		if list, isList := names.([]any); !isList || len(list) != len(enum) {
			d.Errorf(n, path, "field %q: enumNames must be a list as long as enum (%d)", name, len(enum))
		}
	}
	if t == "array" {
		items, _ := p["items"].(map[string]any)
		_, e := items["enum"]
		_, a := items["anyOf"]
		if items == nil || (!e && !a) {
			d.Errorf(n, path, "field %q: an array field is a multi-select: give items: {type: string, enum: […]} or items: {anyOf: [{const: …, title: …}]}", name)
		}
	}
	def, hasDef := p["default"]
	if !hasDef {
		return
	}
	okDef := true
	switch t {
	case "string":
		_, okDef = def.(string)
		if okDef && hasEnum && !slices.Contains(enum, def) {
			d.Errorf(n, path, "field %q: default %q is not one of the enum values", name, def)
		}
	case "integer":
		_, okDef = def.(int)
	case "number":
		switch def.(type) {
		case int, float64:
		default:
			okDef = false
		}
	case "boolean":
		_, okDef = def.(bool)
	case "array":
		_, okDef = def.([]any)
	}
	if !okDef {
		d.Errorf(n, path, "field %q: default %v is not a %s", name, def, t)
	}
}

// childNode returns the value node of key in mapping n, or n when absent (errors
// then point at the mapping).
func childNode(d *config.Decoder, n *yaml.Node, path, key string) *yaml.Node {
	n = d.Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return n
	}
	pairs, _ := d.Pairs(n, path, "the schema")
	for _, p := range pairs {
		if p.Key == key {
			return p.Value
		}
	}
	return n
}

func mapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
