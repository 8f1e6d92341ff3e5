package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file adds an upstreams: entry to a configuration file without touching
// anything else in it: yaml.v3 finds where (its nodes carry their lines and
// columns) and the new lines are inserted into the original text, so comments,
// blank lines, quoting and key order stay as the user wrote them. Re-encoding
// the document would lose or move them.

// addedUpstream is the result of addUpstreamToFile.
type addedUpstream struct {
	data  []byte   // the new file
	line  int      // 1-based line of the first line written
	lines []string // the lines written
	where string   // "mcps[1] (gw)", "a new mcps: entry gateway"
}

// addUpstreamToFile adds upstream name (item: its lines after "id: name",
// unindented) to the server entry of data that pickServer chooses. It checks its
// own work: the new file must read as the old one plus the upstream, else
// nothing is written and the error shows the lines to add by hand.
func addUpstreamToFile(file string, data []byte, server, name string, item []string) (*addedUpstream, error) {
	edit, err := parseYAMLEdit(file, data)
	if err != nil {
		return nil, err
	}
	entry, err := edit.pickServer(server)
	if err != nil {
		return nil, err
	}
	where := "a new mcps: entry gateway"
	if entry != nil {
		for _, id := range upstreamIDs(entry.node) {
			if id == name {
				return nil, fmt.Errorf("%s already has an upstream %q in %s: choose another NAME, or edit or remove that entry", file, name, entry.path)
			}
		}
		where = entry.path
		if entry.id != "" {
			where += " (" + entry.id + ")"
		}
	}
	item = append([]string{"id: " + yamlString(name)}, item...)
	line, written, err := edit.addUpstream(entry, item)
	if err != nil {
		return nil, err
	}
	out := edit.bytes()
	if err := checkAdded(data, out, entry, name); err != nil {
		return nil, fmt.Errorf("%s: helix gateway add could not add the upstream without changing the rest of the file (%v): add these lines to the server's upstreams: by hand:\n%s", file, err, strings.Join(listItem(0, item), "\n"))
	}
	return &addedUpstream{data: out, line: line, lines: written, where: where}, nil
}

// checkAdded reports whether after reads as before with one more upstream, name,
// in entry's upstreams: (entry nil: in a new last mcps: entry "gateway").
func checkAdded(before, after []byte, entry *serverEntry, name string) error {
	var old, cur map[string]any
	if err := yaml.Unmarshal(before, &old); err != nil {
		return err
	}
	if err := yaml.Unmarshal(after, &cur); err != nil {
		return fmt.Errorf("the result is not YAML: %v", err)
	}
	if old == nil {
		old = map[string]any{}
	}
	var list []any
	var parent map[string]any
	if entry == nil {
		mcps, _ := cur["mcps"].([]any)
		if len(mcps) == 0 {
			return errors.New("no mcps: entry was made")
		}
		parent, _ = mcps[len(mcps)-1].(map[string]any)
		if parent == nil || parent["id"] != "gateway" {
			return errors.New("the new mcps: entry is not the last")
		}
		list, _ = parent["upstreams"].([]any)
		if len(parent) != 2 {
			return errors.New("the new mcps: entry has other keys")
		}
		if len(mcps) == 1 {
			if v, ok := old["mcps"]; ok {
				cur["mcps"] = v // null before
			} else {
				delete(cur, "mcps")
			}
		} else {
			cur["mcps"] = mcps[:len(mcps)-1]
		}
	} else {
		parent = entryAt(cur, entry.path)
		if parent == nil {
			return fmt.Errorf("%s is gone", entry.path)
		}
		list, _ = parent["upstreams"].([]any)
		if len(list) > 0 {
			if had := entryAt(old, entry.path); had != nil {
				if v, ok := had["upstreams"]; ok && v == nil {
					parent["upstreams"] = nil // an empty key before
				} else if !ok {
					delete(parent, "upstreams")
				} else {
					parent["upstreams"] = list[:len(list)-1]
				}
			}
		}
	}
	if len(list) == 0 {
		return errors.New("no upstream was added")
	}
	last, _ := list[len(list)-1].(map[string]any)
	if last == nil || last["id"] != name {
		return fmt.Errorf("the last upstream is not %s", name)
	}
	if !reflect.DeepEqual(old, cur) {
		return errors.New("other values changed")
	}
	return nil
}

// entryAt returns the server entry at path (mcps[1], helix.mcp.servers[0]) of
// a decoded file; nil when there is none.
func entryAt(doc map[string]any, path string) map[string]any {
	var listPath []string
	var index int
	if _, err := fmt.Sscanf(path[strings.LastIndexByte(path, '[')+1:], "%d]", &index); err != nil {
		return nil
	}
	listPath = strings.Split(path[:strings.LastIndexByte(path, '[')], ".")
	var cur any = doc
	for _, k := range listPath {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	list, _ := cur.([]any)
	if index < 0 || index >= len(list) {
		return nil
	}
	m, _ := list[index].(map[string]any)
	return m
}

// yamlEdit is a configuration file being edited.
type yamlEdit struct {
	file  string
	lines []string // the file's lines, without line ends
	root  *yaml.Node
	// crlf keeps Windows line ends; final says the file ended with a line end.
	crlf, final bool
}

func parseYAMLEdit(file string, data []byte) (*yamlEdit, error) {
	text := string(data)
	e := &yamlEdit{file: file, crlf: strings.Contains(text, "\r\n")}
	if e.crlf {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	e.final = text == "" || strings.HasSuffix(text, "\n")
	if text != "" {
		e.lines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	}
	var doc, second yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s is not valid YAML: %v (fix it, then run helix gateway add again)", file, err)
	}
	if err := dec.Decode(&second); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s holds more than one YAML document (---): helix gateway add edits a file of one", file)
	}
	switch {
	case doc.Kind == 0: // empty, or comments only
	case doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode:
		e.root = doc.Content[0]
		if e.root.Style&yaml.FlowStyle != 0 {
			return nil, fmt.Errorf("%s is one flow mapping ({…}); helix gateway add edits block-style YAML", file)
		}
	default:
		return nil, fmt.Errorf("%s: the document is not a mapping of keys (mcps:, workflows: …)", file)
	}
	return e, nil
}

// bytes returns the edited file.
func (e *yamlEdit) bytes() []byte {
	text := strings.Join(e.lines, "\n")
	if e.final && len(e.lines) > 0 {
		text += "\n"
	}
	if e.crlf {
		text = strings.ReplaceAll(text, "\n", "\r\n")
	}
	return []byte(text)
}

// insert puts block before line index i (0-based) and returns the 1-based
// number of its first line.
func (e *yamlEdit) insert(i int, block []string) int {
	if i == len(e.lines) && !e.final && len(e.lines) > 0 {
		e.final = true // the old last line now needs its end
	}
	out := make([]string, 0, len(e.lines)+len(block))
	out = append(out, e.lines[:i]...)
	out = append(out, block...)
	out = append(out, e.lines[i:]...)
	e.lines = out
	return i + 1
}

// mapValue returns the value of key in mapping m; nil when absent.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// mapKey returns the key node of key in mapping m; nil when absent.
func mapKey(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

// isEmptyValue reports whether v is a key's empty value ("upstreams:" and
// nothing else on the line but a comment).
func isEmptyValue(v *yaml.Node) bool {
	return v.Kind == yaml.ScalarNode && v.Tag == "!!null" && v.Value == ""
}

// serverEntry is one MCP server entry of the file.
type serverEntry struct {
	node *yaml.Node // the entry's mapping
	id   string
	path string // mcps[0], helix.mcp.servers[1]
}

// serverEntries lists the entries of mcps: and helix.mcp.servers.
func (e *yamlEdit) serverEntries() []serverEntry {
	var out []serverEntry
	add := func(seq *yaml.Node, path string) {
		if seq == nil || seq.Kind != yaml.SequenceNode {
			return
		}
		for i, n := range seq.Content {
			if n.Kind != yaml.MappingNode {
				continue
			}
			id := ""
			if v := mapValue(n, "id"); v != nil && v.Kind == yaml.ScalarNode {
				id = v.Value
			}
			out = append(out, serverEntry{node: n, id: id, path: fmt.Sprintf("%s[%d]", path, i)})
		}
	}
	add(mapValue(e.root, "mcps"), "mcps")
	add(mapValue(mapValue(mapValue(e.root, "helix"), "mcp"), "servers"), "helix.mcp.servers")
	sort.SliceStable(out, func(i, j int) bool { return out[i].node.Line < out[j].node.Line }) // the file's order
	return out
}

// pickServer chooses the entry the upstream goes to: the one named by server
// (required to exist), else the only entry with upstreams:, else an entry with
// id gateway; nil means a new mcps: entry "gateway" is to be made.
func (e *yamlEdit) pickServer(server string) (*serverEntry, error) {
	entries := e.serverEntries()
	if server != "" {
		var ids []string
		for i, s := range entries {
			if s.id == server {
				return &entries[i], nil
			}
			if s.id != "" {
				ids = append(ids, s.id)
			}
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("%s has no MCP server entry with id %q (it has none with an id): leave out --server to create one", e.file, server)
		}
		return nil, fmt.Errorf("%s has no MCP server entry with id %q (it has %s)", e.file, server, strings.Join(ids, ", "))
	}
	var gateways []serverEntry
	for _, s := range entries {
		if mapValue(s.node, "upstreams") != nil {
			gateways = append(gateways, s)
		}
	}
	switch len(gateways) {
	case 1:
		return &gateways[0], nil
	case 0:
		for i, s := range entries {
			if s.id == "gateway" {
				return &entries[i], nil
			}
		}
		return nil, nil
	}
	names := make([]string, len(gateways))
	for i, g := range gateways {
		names[i] = g.path
		if g.id != "" {
			names[i] = g.id
		}
	}
	return nil, fmt.Errorf("%s has %d servers with upstreams: (%s): pick one with --server ID", e.file, len(gateways), strings.Join(names, ", "))
}

// upstreamIDs lists the ids of an entry's upstreams.
func upstreamIDs(entry *yaml.Node) []string {
	var ids []string
	if seq := mapValue(entry, "upstreams"); seq != nil {
		for _, u := range seq.Content {
			if v := mapValue(u, "id"); v != nil {
				ids = append(ids, v.Value)
			}
		}
	}
	return ids
}

// addUpstream writes item (the upstream's lines, unindented, without the dash)
// into entry (nil: a new mcps: entry "gateway"). It returns where the new lines
// are (1-based first line) and the lines themselves.
func (e *yamlEdit) addUpstream(entry *serverEntry, item []string) (int, []string, error) {
	if entry == nil {
		return e.addGatewayEntry(item)
	}
	if entry.node.Style&yaml.FlowStyle != 0 {
		return 0, nil, fmt.Errorf("%s: %s is written in flow style ({…}): write it as a block mapping so that helix gateway add can add to it", e.file, entry.path)
	}
	seq := mapValue(entry.node, "upstreams")
	if seq == nil {
		keyIndent := entry.node.Column - 1
		block := append([]string{strings.Repeat(" ", keyIndent) + "upstreams:"}, listItem(keyIndent+2, item)...)
		return e.insertAfter(entry.node, keyIndent, block)
	}
	if isEmptyValue(seq) {
		key := mapKey(entry.node, "upstreams")
		block := listItem(key.Column+1, item)
		return e.insert(key.Line, block), block, nil
	}
	if seq.Kind != yaml.SequenceNode || seq.Style&yaml.FlowStyle != 0 || len(seq.Content) == 0 {
		return 0, nil, fmt.Errorf("%s:%d: upstreams: of %s is not a block list (- id: …): write it as one so that helix gateway add can add to it", e.file, seq.Line, entry.path)
	}
	dashIndent := seq.Column - 1
	return e.insertAfter(seq, dashIndent, listItem(dashIndent, item))
}

// addGatewayEntry adds a new mcps: entry "gateway" holding the upstream: to
// the mcps: list, or as a new mcps: key at the end of the file.
func (e *yamlEdit) addGatewayEntry(item []string) (int, []string, error) {
	entry := []string{"id: gateway", "upstreams:"}
	entry = append(entry, listItem(2, item)...)
	mcps := mapValue(e.root, "mcps")
	if mcps == nil {
		block := append([]string{"mcps:"}, listItem(2, entry)...)
		i := len(e.lines)
		if i > 0 && strings.TrimSpace(e.lines[i-1]) != "" {
			// A blank line sets the new section off (the file's own trailing
			// blank lines do when it has some).
			at := e.insert(i, append([]string{""}, block...))
			return at + 1, block, nil
		}
		return e.insert(i, block), block, nil
	}
	if isEmptyValue(mcps) {
		key := mapKey(e.root, "mcps")
		block := listItem(key.Column+1, entry)
		return e.insert(key.Line, block), block, nil
	}
	if mcps.Kind != yaml.SequenceNode || mcps.Style&yaml.FlowStyle != 0 || len(mcps.Content) == 0 {
		return 0, nil, fmt.Errorf("%s:%d: mcps: is not a block list (- id: …): write it as one so that helix gateway add can add to it", e.file, mcps.Line)
	}
	dashIndent := mcps.Column - 1
	return e.insertAfter(mcps, dashIndent, listItem(dashIndent, entry))
}

// listItem makes lines a list item whose dash is at column indent.
func listItem(indent int, lines []string) []string {
	out := make([]string, len(lines))
	pad := strings.Repeat(" ", indent)
	for i, l := range lines {
		if i == 0 {
			out[i] = pad + "- " + l
		} else {
			out[i] = pad + "  " + l
		}
	}
	return out
}

// insertAfter inserts block after the last line of node n: before the first
// node that follows n in the document, and before the blank lines and the
// comments (at most as indented as indent) that lead up to that node, which
// belong to it.
func (e *yamlEdit) insertAfter(n *yaml.Node, indent int, block []string) (int, []string, error) {
	inside := map[*yaml.Node]bool{}
	var mark func(*yaml.Node)
	mark = func(x *yaml.Node) {
		inside[x] = true
		for _, c := range x.Content {
			mark(c)
		}
	}
	mark(n)
	next := len(e.lines) + 1 // 1-based line of what follows n
	var walk func(*yaml.Node)
	walk = func(x *yaml.Node) {
		if !inside[x] && x.Line > n.Line && x.Line < next {
			next = x.Line
		}
		for _, c := range x.Content {
			walk(c)
		}
	}
	walk(e.root)
	i := next - 1 // 0-based index of that line
	for i-1 >= n.Line && leadsUp(e.lines[i-1], indent) {
		i--
	}
	if i > len(e.lines) {
		return 0, nil, errors.New("internal: insertion past the end of the file")
	}
	return e.insert(i, block), block, nil
}

// leadsUp reports whether line is blank or a comment no deeper than indent.
func leadsUp(line string, indent int) bool {
	t := strings.TrimLeft(line, " ")
	return t == "" || (strings.HasPrefix(t, "#") && len(line)-len(t) <= indent)
}

// yamlString writes s as a YAML scalar that reads back as the string s: plain
// when that is safe, else double-quoted (a JSON string is a valid YAML one).
func yamlString(s string) string {
	out, err := yaml.Marshal(s)
	plain := strings.TrimSuffix(string(out), "\n")
	if err != nil || strings.Contains(plain, "\n") || strings.ContainsAny(s, "\t\r") {
		q, _ := json.Marshal(s)
		return string(q)
	}
	return plain
}
