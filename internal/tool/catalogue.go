package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Catalogue holds the tools of one application: workflows, `tools:` entries,
// agents and pipelines register into it; MCP servers serve a selection of it
// ([Catalogue.Select]); agents call through it. It is safe for concurrent use.
type Catalogue struct {
	mu       sync.RWMutex
	order    []string         // ids of tools and exclusions, in registration order
	tools    map[string]*Tool // by id
	excluded map[string]error // ids known but not tools, with the reason
}

// NewCatalogue returns an empty catalogue.
func NewCatalogue() *Catalogue {
	return &Catalogue{tools: map[string]*Tool{}, excluded: map[string]error{}}
}

// Add checks t and registers it under t.ID. Only an empty or duplicate id is an
// error here: a tool that cannot be served as declared (an invalid name, a schema
// that is not an object schema) is registered with its problem, which
// [Catalogue.Select] reports whenever the tool is selected — so a broken tool fails
// whoever serves it, not everyone.
func (c *Catalogue) Add(t *Tool) error {
	if t.ID == "" {
		return errors.New("tool: empty id")
	}
	t.compile()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taken(t.ID) {
		return fmt.Errorf("tool %q: registered twice", t.ID)
	}
	c.tools[t.ID] = t
	c.order = append(c.order, t.ID)
	return nil
}

// Exclude records id as known but not a tool, with the reason: selecting all tools
// skips it; selecting it by id reports reason.
func (c *Catalogue) Exclude(id string, reason error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taken(id) {
		return
	}
	c.excluded[id] = reason
	c.order = append(c.order, id)
}

func (c *Catalogue) taken(id string) bool {
	_, tool := c.tools[id]
	_, ex := c.excluded[id]
	return tool || ex
}

// Tool returns the tool registered as id.
func (c *Catalogue) Tool(id string) (*Tool, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tools[id]
	return t, ok
}

// Tools returns the registered tools in registration order, broken ones included
// ([Tool.Problem]).
func (c *Catalogue) Tools() []*Tool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Tool, 0, len(c.tools))
	for _, id := range c.order {
		if t, ok := c.tools[id]; ok {
			out = append(out, t)
		}
	}
	return out
}

// Select returns the tools with the given ids, in the order given (nil: every tool,
// in registration order, skipping excluded ids), as a [Set] whose names are unique.
//
// It fails on ids that were excluded (all of them, joined), then on the first
// selected tool that is broken or whose name another selected tool has
// (*NameClashError). Ids that name nothing come last, as an *UnknownError returned
// with the Set of the tools that resolved.
func (c *Catalogue) Select(ids []string) (*Set, error) {
	c.mu.RLock()
	var candidates []*Tool
	var missing []string
	var errs []error
	if ids == nil {
		for _, id := range c.order {
			if t, ok := c.tools[id]; ok {
				candidates = append(candidates, t)
			}
		}
	} else {
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			if reason, ok := c.excluded[id]; ok {
				errs = append(errs, reason)
				continue
			}
			t, ok := c.tools[id]
			if !ok {
				missing = append(missing, id)
				continue
			}
			candidates = append(candidates, t)
		}
	}
	known := make([]string, 0, len(c.tools))
	for _, id := range c.order {
		if _, ok := c.tools[id]; ok {
			known = append(known, id)
		}
	}
	c.mu.RUnlock()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	s, err := newSet(candidates)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return s, &UnknownError{IDs: missing, Known: known}
	}
	return s, nil
}

// Set is a selection of tools with unique names: what one MCP server serves. A tool
// is found by its name, and by its id where that differs (an alias: spec §4.2 lets
// a client call format-code for the tool format_code). Safe for concurrent use; it
// does not change after it is made.
type Set struct {
	tools   []*Tool
	byName  map[string]*Tool // names and aliases
	aliases map[string]string
}

// NewSet makes a Set of tools (each compiled by Catalogue.Add, or replaced by
// [Tool.WithInput]) after the same checks as [Catalogue.Select].
func NewSet(tools []*Tool) (*Set, error) { return newSet(tools) }

func newSet(tools []*Tool) (*Set, error) {
	s := &Set{tools: tools, byName: make(map[string]*Tool, len(tools)), aliases: map[string]string{}}
	owner := make(map[string]string, len(tools))
	for _, t := range tools {
		if t.broken != nil {
			return nil, t.broken
		}
		if other, dup := owner[t.Name]; dup {
			return nil, &NameClashError{Name: t.Name, IDs: [2]string{other, t.ID}}
		}
		owner[t.Name] = t.ID
		s.byName[t.Name] = t
	}
	for _, t := range tools {
		if t.ID != t.Name {
			if _, taken := s.byName[t.ID]; !taken {
				s.aliases[t.ID] = t.Name
			}
		}
	}
	for alias, name := range s.aliases {
		s.byName[alias] = s.byName[name]
	}
	return s, nil
}

// Tools returns the tools of the set in selection order. The slice is shared: do
// not modify it.
func (s *Set) Tools() []*Tool { return s.tools }

// Lookup finds a tool by name, or by its id when that differs from its name.
func (s *Set) Lookup(name string) *Tool { return s.byName[name] }

// Aliases maps the ids that differ from their tool's name to that name.
func (s *Set) Aliases() map[string]string { return s.aliases }

// NameClashError reports two tools whose names are equal (ids that sanitize alike);
// IDs are in selection order.
type NameClashError struct {
	Name string
	IDs  [2]string
}

func (e *NameClashError) Error() string {
	return fmt.Sprintf("workflows %q and %q both become the MCP tool %q; rename one of them (tool names replace '.', '-' and '/' with '_')",
		e.IDs[0], e.IDs[1], e.Name)
}

// UnknownError reports selected ids that name no tool of the catalogue.
type UnknownError struct {
	IDs   []string
	Known []string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("expose: no workflow, tool or agent with id %s (known: %s)", quoteList(e.IDs), quoteList(e.Known))
}

func quoteList(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

// ToolSet returns s itself: a fixed Set is a source of tools for an agent
// (agent.ToolSource), which asks its source at the start of every run.
func (s *Set) ToolSet(context.Context) (*Set, error) { return s, nil }
