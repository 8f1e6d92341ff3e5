// Package workflow is the console's Workflows pages: the list of every
// workflow, tool, agent and pipeline (/workflows) and one workflow drawn as a
// graph from its YAML (/workflows/{id}) with live per-step counts, where a
// node links to its YAML text and file:line.
//
// The graph is built once from the configuration (Build) and drawn on the
// server as SVG, so the page is complete without JavaScript; workflow.js only
// refreshes the counts from a JSON endpoint.
package workflow

import (
	"strconv"
	"strings"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/uri"
	"go.yaml.in/yaml/v3"
)

// Graph is one workflow (or tool, agent, pipeline) as the console draws it.
type Graph struct {
	Kind        string // "workflow", "tool", "agent", "pipeline" (engine.Kind)
	ID          string
	Description string
	// Trigger is the trigger URI as written (${env:…} unresolved), or a word
	// saying how the entry is called ("called as an MCP tool").
	Trigger string
	Pos     config.Pos
	// Steps is the top-level step list, in order; Top of the i-th is i.
	Steps []*Node
	// Failure holds what runs when a step fails: the error handler, its dead
	// letter channel, on_error.
	Failure []*Node
	// Nodes is every node, trigger first; a node's N is its index here, and
	// the ?node= of its link.
	Nodes []*Node
}

// Node is one box of the graph.
type Node struct {
	N int
	// Kind is the step kind as written ("log", "choice", "a-kind-we-do-not-know"),
	// or "trigger", "error handler", "dead letter", "on_error", "agent", "pipeline".
	Kind string
	// Label is a short detail: a URI, a message, the first line of a script.
	Label string
	Pos   config.Pos
	Path  string
	// Top is the index of a top-level step (the one the engine counts), -1 for
	// every other node.
	Top int
	// Nested is true for a step of a nested step list (a choice or multicast
	// branch, a split's steps): the engine counts it by its position, Pos.
	Nested bool
	// Link is the id of the workflow this node sends to (a target whose URI is
	// that workflow's trigger); "" for none.
	Link string
	// Branches are nested step lists: a choice's when/otherwise, a multicast's
	// branches, a split's steps.
	Branches []Branch
	// FanOut is true when the branches run at the same time (multicast with
	// strategy parallel).
	FanOut bool
}

// Branch is one nested step list with its edge label.
type Branch struct {
	Label string
	Steps []*Node
}

// maxDepth and maxNodes bound the graph of a hostile or generated file; what
// is beyond is drawn as one "… more steps" node.
const (
	maxDepth = 12
	maxNodes = 2000
)

// Build returns the graphs of cfg's workflows, tools, agents and pipelines, in
// that order. It never fails: a step kind it does not know is a plain node, a
// shape it cannot read has no branches. files gives the YAML as written; nil
// draws from the loaded configuration.
func Build(cfg *config.Config, files *Files) []*Graph {
	if cfg == nil {
		return nil
	}
	links := triggerIndex(cfg)
	var out []*Graph
	for i := range cfg.Workflows {
		w := &cfg.Workflows[i]
		g := &Graph{Kind: "workflow", ID: w.ID, Description: w.Description, Trigger: w.FromRaw, Pos: w.Pos}
		if g.Trigger == "" {
			g.Trigger = w.From
		}
		b := builder{g: g, files: files, links: links}
		trig := b.add(&Node{Kind: "trigger", Label: g.Trigger, Pos: w.FromPos, Top: -1})
		if g.Trigger == "" {
			trig.Label = "no trigger: never runs"
		}
		g.Steps = b.steps(w.Steps)
		b.failure(w.ErrorHandler, w.OnError)
		out = append(out, g)
	}
	for i := range cfg.Tools {
		t := &cfg.Tools[i]
		g := &Graph{Kind: "tool", ID: t.ID, Description: t.Description, Trigger: "called as an MCP tool", Pos: t.Pos}
		b := builder{g: g, files: files, links: links}
		b.add(&Node{Kind: "trigger", Label: g.Trigger, Pos: t.Pos, Top: -1})
		g.Steps = b.steps(t.Steps)
		out = append(out, g)
	}
	for i := range cfg.Agents {
		a := &cfg.Agents[i]
		if a.ID == "" {
			continue
		}
		trigger := a.TriggerRaw
		if trigger == "" {
			trigger = "called as an MCP tool"
		}
		g := &Graph{Kind: "agent", ID: a.ID, Description: a.Description, Trigger: trigger, Pos: a.Pos}
		b := builder{g: g, files: files, links: links}
		b.add(&Node{Kind: "trigger", Label: trigger, Pos: a.TriggerPos, Top: -1})
		g.Steps = []*Node{b.add(&Node{Kind: "agent", Label: "model turns and tool calls", Pos: a.Pos, Path: a.Path, Top: -1})}
		out = append(out, g)
	}
	for i := range cfg.Pipelines {
		p := &cfg.Pipelines[i]
		g := &Graph{Kind: "pipeline", ID: p.ID, Description: p.Description, Trigger: "called as an MCP tool", Pos: p.Pos}
		b := builder{g: g, files: files, links: links}
		b.add(&Node{Kind: "trigger", Label: g.Trigger, Pos: p.Pos, Top: -1})
		g.Steps = []*Node{b.add(&Node{Kind: "pipeline", Label: "retrieve from " + p.ID, Pos: p.Pos, Path: p.Path, Top: -1})}
		out = append(out, g)
	}
	return out
}

// NestedPositions are the positions ("file:line:col") of the graph's nested
// steps, each once: the keys of their counts (stepstats.Def.Nested).
func (g *Graph) NestedPositions() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		if k := n.Pos.String(); n.Nested && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

type builder struct {
	g     *Graph
	files *Files
	links map[string]string
	full  bool
}

func (b *builder) add(n *Node) *Node {
	n.N = len(b.g.Nodes)
	b.g.Nodes = append(b.g.Nodes, n)
	return n
}

// steps builds the top-level steps.
func (b *builder) steps(list []config.StepConfig) []*Node {
	out := make([]*Node, 0, len(list))
	for i, s := range list {
		if b.tooMany(&out, s.Pos) {
			break
		}
		v := b.files.keyValue(s.Pos)
		if v == nil {
			v = s.Node
		}
		n := b.add(&Node{Kind: s.Kind, Pos: s.Pos, Path: s.Path, Top: i})
		b.fill(n, v, 1)
		out = append(out, n)
	}
	return out
}

// tooMany appends the "more steps" node once the graph is full.
func (b *builder) tooMany(out *[]*Node, p config.Pos) bool {
	if len(b.g.Nodes) < maxNodes {
		return false
	}
	if !b.full {
		b.full = true
		*out = append(*out, b.add(&Node{Kind: "more steps", Label: "not drawn: the graph is limited to " + itoa(maxNodes) + " nodes", Pos: p, Top: -1}))
	}
	return true
}

// nested builds a nested step list (a YAML sequence of one-key mappings);
// counted says the engine traces its steps (stepstats counts them).
func (b *builder) nested(seq *yaml.Node, path string, depth int, counted bool) []*Node {
	seq = deref(seq)
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	var out []*Node
	for i, item := range seq.Content {
		item = deref(item)
		if item == nil || item.Kind != yaml.MappingNode || len(item.Content) != 2 {
			continue
		}
		k := item.Content[0]
		p := config.Pos{File: b.g.Pos.File, Line: k.Line, Col: k.Column}
		if b.tooMany(&out, p) {
			break
		}
		n := b.add(&Node{Kind: k.Value, Pos: p, Path: path + "[" + itoa(i) + "]", Top: -1, Nested: counted})
		if depth >= maxDepth {
			n.Label = "nested deeper than " + itoa(maxDepth) + " levels: not drawn"
		} else {
			b.fill(n, item.Content[1], depth+1)
		}
		out = append(out, n)
	}
	return out
}

// fill sets a step node's label, link and branches from its YAML value.
func (b *builder) fill(n *Node, v *yaml.Node, depth int) {
	v = deref(v)
	n.Label = label(v)
	if u := uriOf(v); u != "" {
		n.Link = b.links[linkKey(u)]
	}
	if v == nil || v.Kind != yaml.MappingNode {
		return
	}
	switch n.Kind {
	case "choice":
		whens := deref(get(v, "when"))
		if whens != nil && whens.Kind == yaml.SequenceNode {
			for i, w := range whens.Content {
				w = deref(w)
				cond := strings.TrimSpace(get(w, "starlang").Value)
				n.Branches = append(n.Branches, Branch{Label: "when " + shorten(firstLine(cond), 32),
					Steps: b.nested(get(w, "steps"), n.Path+".when["+itoa(i)+"].steps", depth, true)})
			}
		}
		if o := deref(get(v, "otherwise")); o != nil {
			steps := o
			if o.Kind == yaml.MappingNode {
				steps = get(o, "steps")
			}
			n.Branches = append(n.Branches, Branch{Label: "otherwise", Steps: b.nested(steps, n.Path+".otherwise", depth, true)})
		} else {
			n.Branches = append(n.Branches, Branch{Label: "no match: go on"})
		}
		if n.Label == "" {
			n.Label = itoa(len(n.Branches)) + " branches"
		}
	case "multicast":
		n.FanOut = get(v, "strategy").Value == "parallel"
		steps := deref(get(v, "steps"))
		if steps != nil && steps.Kind == yaml.SequenceNode {
			for i := range steps.Content {
				one := &yaml.Node{Kind: yaml.SequenceNode, Content: steps.Content[i : i+1]}
				label := "branch " + itoa(i+1)
				if n.FanOut {
					label += " (parallel)"
				}
				for _, s := range b.nested(one, n.Path+".steps", depth, true) {
					s.Path = n.Path + ".steps[" + itoa(i) + "]"
					n.Branches = append(n.Branches, Branch{Label: label, Steps: []*Node{s}})
				}
			}
		}
		if n.Label == "" {
			n.Label = itoa(len(n.Branches)) + " branches"
			if n.FanOut {
				n.Label += ", in parallel"
			}
		}
	default:
		// Any other kind with a nested step list (split's steps, a wait's
		// notify): one branch per list, labelled by its key.
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, val := v.Content[i].Value, deref(v.Content[i+1])
			if !isStepList(val) {
				continue
			}
			label := k
			if n.Kind == "split" && k == "steps" {
				label = "for each element"
			}
			// The lists the engine runs as nested steps, and traces: a split's
			// steps, the notify: of approve and await. Any other list is drawn
			// but says it is not counted.
			counted := n.Kind == "split" && k == "steps" || k == "notify"
			n.Branches = append(n.Branches, Branch{Label: label, Steps: b.nested(val, n.Path+"."+k, depth, counted)})
		}
	}
}

// failure adds the error handler, its dead letter channel and on_error.
func (b *builder) failure(eh *config.ErrorHandlerConfig, onErr *config.OnErrorConfig) {
	if eh != nil {
		n := b.add(&Node{Kind: "error handler", Pos: eh.Pos, Top: -1, Label: "redeliveries: none"})
		if eh.Default != nil && eh.Default.MaximumRedeliveries != 0 {
			n.Label = "redeliveries: " + itoa(eh.Default.MaximumRedeliveries)
		}
		b.g.Failure = append(b.g.Failure, n)
		if eh.DeadLetterChannel != "" {
			raw := eh.DeadLetterChannel
			pos := eh.Pos
			if v := b.files.valueAt(eh.Pos); v != nil {
				for _, key := range []string{"dead_letter_channel", "dead-letter-channel", "deadLetterChannel"} {
					if k, val := getKey(v, key); val != nil {
						raw, pos = val.Value, config.Pos{File: eh.Pos.File, Line: k.Line, Col: k.Column}
						break
					}
				}
			}
			d := b.add(&Node{Kind: "dead letter", Label: raw, Pos: pos, Top: -1, Link: b.links[linkKey(raw)]})
			n.Branches = []Branch{{Label: "after the last redelivery", Steps: []*Node{d}}}
		}
	}
	if onErr != nil {
		label := ""
		if onErr.Status != 0 {
			label = "answers status " + itoa(onErr.Status)
		} else if len(onErr.StatusByClass) > 0 {
			label = "status by failure class (" + itoa(len(onErr.StatusByClass)) + ")"
		}
		b.g.Failure = append(b.g.Failure, b.add(&Node{Kind: "on_error", Label: label, Pos: onErr.Pos, Top: -1}))
	}
}

// triggerIndex maps each workflow's trigger address (scheme, host and path,
// as loaded and as written) to its id, so that a target naming it links to it.
func triggerIndex(cfg *config.Config) map[string]string {
	m := map[string]string{}
	for _, w := range cfg.Workflows {
		for _, t := range []string{w.From, w.FromRaw} {
			if k := linkKey(t); k != "" {
				if _, taken := m[k]; !taken {
					m[k] = w.ID
				}
			}
		}
	}
	return m
}

func linkKey(raw string) string {
	if raw == "" || uri.HasPlaceholders(strings.SplitN(raw, "?", 2)[0]) && !strings.Contains(raw, "${env:") {
		return ""
	}
	u, err := uri.Parse(raw)
	if err != nil || u.Host == "" && u.Path == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// label is the short text of a step's value.
func label(v *yaml.Node) string {
	if v == nil {
		return ""
	}
	switch v.Kind {
	case yaml.ScalarNode:
		return shorten(firstLine(v.Value), 60)
	case yaml.MappingNode:
		for _, k := range []string{"uri", "message", "name", "id", "starlang", "expression", "value", "for", "prompt", "tool", "agent", "pipeline"} {
			if s := get(v, k); s.Kind == yaml.ScalarNode && s.Value != "" {
				return shorten(firstLine(s.Value), 60)
			}
		}
	}
	return ""
}

// uriOf is the URI a step sends to: its scalar value or its uri: key.
func uriOf(v *yaml.Node) string {
	if v == nil {
		return ""
	}
	s := v.Value
	if v.Kind == yaml.MappingNode {
		s = get(v, "uri").Value
	}
	if strings.Contains(s, "://") && !strings.ContainsAny(s, " \n") {
		return s
	}
	return ""
}

func isStepList(v *yaml.Node) bool {
	if v == nil || v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		return false
	}
	for _, it := range v.Content {
		it = deref(it)
		if it == nil || it.Kind != yaml.MappingNode || len(it.Content) != 2 || it.Content[0].Kind != yaml.ScalarNode {
			return false
		}
	}
	return true
}

var empty = &yaml.Node{}

// get is the value of key k of mapping v; an empty node when absent, so that
// callers can read .Value and .Kind without checks.
func get(v *yaml.Node, k string) *yaml.Node {
	if _, val := getKey(v, k); val != nil {
		return val
	}
	return empty
}

func getKey(v *yaml.Node, k string) (*yaml.Node, *yaml.Node) {
	v = deref(v)
	if v == nil || v.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if v.Content[i].Value == k {
			return v.Content[i], deref(v.Content[i+1])
		}
	}
	return nil, nil
}

// deref follows an alias (once: the loader bounds alias expansion) and a
// document node.
func deref(v *yaml.Node) *yaml.Node {
	for i := 0; v != nil && i < 4; i++ {
		switch v.Kind {
		case yaml.AliasNode:
			v = v.Alias
		case yaml.DocumentNode:
			if len(v.Content) == 0 {
				return nil
			}
			v = v.Content[0]
		default:
			return v
		}
	}
	return v
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func itoa(i int) string { return strconv.Itoa(i) }
