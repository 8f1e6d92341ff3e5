package app

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/uri"
)

// This file holds the checks that let `helix validate` find at load time what would
// otherwise only fail when a call is made: the steps of entries dropped for a
// duplicate id, every MCP naming problem of a server (not just the first), direct://
// targets nobody consumes, and a choice on HelixMcpIsError that can never see a failed
// call. Each finding carries the file:line:col of what it is about.

// checkDuplicateBodies builds, and throws away, the workflows and tools that config
// dropped because their id was already taken: the duplicate id is one error, and
// the mistakes in their steps are reported in the same run instead of after a rename.
func (a *App) checkDuplicateBodies() {
	for _, w := range a.cfg.DuplicateWorkflows {
		// A trigger table of its own: the entry never runs, so its trigger clashing
		// with the original's would only repeat the duplicate-id error.
		a.buildWorkflow(w, map[string]config.Pos{})
	}
	for _, t := range a.cfg.DuplicateTools {
		a.buildTool(t)
	}
}

// mcpNamingProblems lists every naming problem of one MCP server, each at the
// workflow it concerns: ids whose tool names are invalid, exposed ids that cannot be
// tools, and groups of ids that sanitize to the same tool name. Building a server
// stops at the first problem, so each exposed id is described on its own here. The
// second result is the exposed ids that name nothing (a warning, see addMCPServer).
func (a *App) mcpNamingProblems(comp *mcpserver.Component, opts mcpserver.Options, serverPos config.Pos) (config.Errors, *mcpserver.UnknownExposeError) {
	ids := opts.Expose
	if ids == nil {
		for _, wf := range a.hc.Workflows() {
			if wf.FromURI == "" || strings.HasPrefix(strings.ToLower(wf.FromURI), mcpServerScheme+":") {
				continue // not a tool; listed by nobody
			}
			ids = append(ids, wf.ID)
		}
	}
	var errs config.Errors
	var unknown *mcpserver.UnknownExposeError
	hint := fmt.Sprintf("exposed by the MCP server at %s", serverPos)
	seen := map[string]bool{}
	byName := map[string]string{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		probe := opts
		probe.Expose = []string{id}
		probe.Tools = nil
		if ov, ok := opts.Tools[id]; ok {
			probe.Tools = map[string]mcpserver.ToolOverride{id: ov}
		}
		_, err := comp.Describe(probe)
		var u *mcpserver.UnknownExposeError
		if errors.As(err, &u) {
			if unknown == nil {
				unknown = &mcpserver.UnknownExposeError{Known: u.Known}
			}
			unknown.IDs = append(unknown.IDs, u.IDs...)
			continue
		}
		pos, ok := a.workflowPos(id)
		if !ok {
			pos = serverPos
		}
		if err != nil {
			errs = append(errs, &config.Error{Pos: pos, Msg: err.Error(), Hint: hint})
			continue
		}
		name := tool.SanitizeName(id)
		if first, dup := byName[name]; dup {
			clash := &mcpserver.ToolNameClashError{Name: name, IDs: [2]string{first, id}}
			errs = append(errs, &config.Error{Pos: pos, Msg: clash.Error(), Hint: hint})
			continue
		}
		byName[name] = id
	}
	return errs, unknown
}

// lintWorkflows adds the warnings about step lists: direct:// targets that no
// workflow consumes, and choices on HelixMcpIsError after an mcp:// target that
// fails the exchange on a tool error.
func (a *App) lintWorkflows() {
	consumers := map[string]bool{}
	for _, w := range a.cfg.Workflows {
		if name, ok := directName(w.From); ok {
			consumers[name] = true
		}
	}
	names := make([]string, 0, len(consumers))
	for n := range consumers {
		names = append(names, n)
	}
	sort.Strings(names)
	l := &stepLinter{consumers: consumers, names: names}
	for _, w := range a.cfg.Workflows {
		l.list(fromConfig(w.Steps))
		if eh := w.ErrorHandler; eh != nil && eh.DeadLetterChannel != "" {
			l.direct(eh.DeadLetterChannel, eh.Pos)
		}
	}
	for _, t := range a.cfg.Tools {
		l.list(fromConfig(t.Steps))
	}
	a.cfg.Warnings = append(a.cfg.Warnings, l.warnings...)
}

// directName is the consumer name of a direct:// URI without placeholders.
func directName(raw string) (string, bool) {
	if raw == "" || uri.HasPlaceholders(raw) {
		return "", false
	}
	u, err := uri.Parse(raw)
	if err != nil || u.Scheme != "direct" {
		return "", false
	}
	return u.Host + u.Path, true
}

// lintStep is one step of a list: its kind, its value node and where its key is.
type lintStep struct {
	kind string
	node *yaml.Node
	pos  config.Pos
}

func fromConfig(steps []config.StepConfig) []lintStep {
	out := make([]lintStep, len(steps))
	for i, s := range steps {
		out[i] = lintStep{kind: s.Kind, node: s.Node, pos: s.Pos}
	}
	return out
}

type stepLinter struct {
	consumers map[string]bool
	names     []string
	warnings  config.Errors
}

// throwingMCP is an mcp:// target that fails the exchange on a tool error.
type throwingMCP struct {
	uri string
	pos config.Pos
}

// list lints one step list and, recursively, the step lists nested in its steps
// (choice branches, multicast branches).
func (l *stepLinter) list(steps []lintStep) {
	var lastThrowing *throwingMCP
	for _, s := range steps {
		switch s.kind {
		case "target", "to", "wiretap":
			raw, uriNode, params := targetURI(s.node)
			pos := nodePos(s.pos.File, uriNode, s.pos)
			l.direct(raw, pos)
			l.nearMisses(raw, pos)
			if s.kind != "wiretap" {
				if throwsOnToolError(raw, params) {
					lastThrowing = &throwingMCP{uri: raw, pos: pos}
				} else if strings.HasPrefix(strings.ToLower(raw), "mcp://") {
					lastThrowing = nil
				}
			}
		case "choice":
			if lastThrowing != nil {
				if cond := mcpIsErrorCondition(s.node); cond != nil {
					l.warnings = append(l.warnings, &config.Error{
						Pos: nodePos(s.pos.File, cond, s.pos),
						Msg: fmt.Sprintf("choice tests HelixMcpIsError, but the mcp:// target at %s fails the exchange on a tool error, so the steps after it (this choice too) do not run when the tool fails", lastThrowing.pos),
						Hint: "add throwExceptionOnFailure=false to the target (" + withOption(lastThrowing.uri) +
							") so that a failed call sets HelixMcpIsError and goes on; see docs/mcp-client.md",
					})
				}
			}
		}
		for _, nested := range nestedStepLists(s.node, s.pos.File) {
			l.list(nested)
		}
	}
}

// nearMisses warns about query parameters of an http:// or https:// target that
// look like a misspelled option (timeot=5s): they are sent to the server, as
// documented, so they are not errors, but the option does not take effect.
func (l *stepLinter) nearMisses(raw string, pos config.Pos) {
	u, err := uri.Parse(raw)
	if err != nil {
		return
	}
	spec := component.SpecOf(u.Scheme)
	if spec == nil {
		return
	}
	for _, m := range spec.NearMisses(u) {
		l.warnings = append(l.warnings, &config.Error{Pos: pos,
			Msg:  fmt.Sprintf("%s: query parameter %s is sent to the server, not read by %s:// (did you mean the option %s?)", spec.Redact(raw), m[0], u.Scheme, m[1]),
			Hint: "options of " + u.Scheme + ":// are listed by helix components " + u.Scheme})
	}
}

// direct warns about a direct:// target no workflow consumes.
func (l *stepLinter) direct(raw string, pos config.Pos) {
	name, ok := directName(raw)
	if !ok || l.consumers[name] {
		return
	}
	msg := fmt.Sprintf("direct://%s: no workflow consumes from it", name)
	if s := config.Suggest(name, l.names); s != "" {
		msg += fmt.Sprintf(" (did you mean direct://%s?)", s)
	}
	l.warnings = append(l.warnings, &config.Error{Pos: pos, Msg: msg,
		Hint: fmt.Sprintf("a call fails at run time with \"no workflow is listening\"; define a workflow with trigger direct://%s, or load the file that has it", name)})
}

// targetURI reads a target's URI (a scalar, or the uri: of a mapping) and its
// parameters: mapping.
func targetURI(n *yaml.Node) (raw string, uriNode *yaml.Node, params map[string]string) {
	n = resolve(n)
	if n == nil {
		return "", nil, nil
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value, n, nil
	}
	if n.Kind != yaml.MappingNode {
		return "", nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		switch k.Value {
		case "uri":
			if v != nil && v.Kind == yaml.ScalarNode {
				raw, uriNode = v.Value, v
			}
		case "parameters":
			if v != nil && v.Kind == yaml.MappingNode {
				params = map[string]string{}
				for j := 0; j+1 < len(v.Content); j += 2 {
					params[v.Content[j].Value] = resolve(v.Content[j+1]).Value
				}
			}
		}
	}
	return raw, uriNode, params
}

// throwsOnToolError says whether raw is an mcp:// target that fails the exchange on a
// tool error, with the step's parameters: applied over the URI's query as the
// engine applies them.
func throwsOnToolError(raw string, params map[string]string) bool {
	u, err := uri.Parse(raw)
	if err != nil || u.Scheme != "mcp" {
		return false
	}
	for k, v := range params {
		u.Params.Set(k, v)
	}
	return mcpclient.ThrowsOnToolError(u)
}

func withOption(raw string) string {
	if strings.Contains(raw, "?") {
		return raw + "&throwExceptionOnFailure=false"
	}
	return raw + "?throwExceptionOnFailure=false"
}

// mcpIsErrorCondition returns the first when: condition of a choice whose script
// mentions HelixMcpIsError.
func mcpIsErrorCondition(n *yaml.Node) *yaml.Node {
	when := mappingValue(resolve(n), "when")
	if when == nil || when.Kind != yaml.SequenceNode {
		return nil
	}
	for _, c := range when.Content {
		script := mappingValue(resolve(c), "starlang")
		if script != nil && script.Kind == yaml.ScalarNode && strings.Contains(strings.ToLower(script.Value), "helixmcpiserror") {
			return script
		}
	}
	return nil
}

// nestedStepLists finds the step lists (`steps:` sequences) nested in a step's value,
// not descending into the nested lists' own steps (list does that).
func nestedStepLists(n *yaml.Node, file string) [][]lintStep {
	var out [][]lintStep
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		n = resolve(n)
		if n == nil || depth > 50 {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], resolve(n.Content[i+1])
				if k.Value == "starlang" {
					continue
				}
				if k.Value == "steps" && v != nil && v.Kind == yaml.SequenceNode {
					var steps []lintStep
					for _, item := range v.Content {
						item = resolve(item)
						if item == nil || item.Kind != yaml.MappingNode || len(item.Content) != 2 {
							continue
						}
						key := item.Content[0]
						steps = append(steps, lintStep{kind: key.Value, node: item.Content[1],
							pos: config.Pos{File: file, Line: key.Line, Col: key.Column}})
					}
					out = append(out, steps)
					continue
				}
				walk(v, depth+1)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, depth+1)
			}
		}
	}
	walk(n, 0)
	return out
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolve(n.Content[i+1])
		}
	}
	return nil
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 10; i++ {
		n = n.Alias
	}
	return n
}

func nodePos(file string, n *yaml.Node, fallback config.Pos) config.Pos {
	if n == nil || n.Line == 0 {
		return fallback
	}
	return config.Pos{File: file, Line: n.Line, Col: n.Column}
}
