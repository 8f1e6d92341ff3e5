package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/arvenza/helix/internal/config"
	"go.yaml.in/yaml/v3"
)

// Files is the YAML source of the application's configuration files, read
// once when the console starts: node details show a step as it is written
// (a ${env:NAME} reference, never its value), and the graph's labels come from
// the same unresolved text. The configuration's own nodes cannot serve: their
// ${env:…} references are already resolved.
type Files struct {
	byName map[string]*file
}

type file struct {
	lines [][]byte
	// keys maps the position of a mapping key, and values the position of a
	// mapping value, to the value node.
	keys, values map[[2]int]*yaml.Node
}

// maxFileBytes bounds what is read of one file; config.Load refuses larger
// ones anyway.
const maxFileBytes = 8 << 20

// ReadFiles reads names (config.Config.Files). A file that cannot be read or
// parsed is left out: its steps are drawn from the loaded configuration and
// their YAML is not shown.
func ReadFiles(names []string) *Files {
	fs := &Files{byName: map[string]*file{}}
	for _, name := range names {
		data, err := readLimited(name)
		if err != nil {
			continue
		}
		if f := parseFile(data); f != nil {
			fs.byName[name] = f
		}
	}
	return fs
}

// FilesFromBytes is ReadFiles for documents already in memory, by name.
func FilesFromBytes(docs map[string][]byte) *Files {
	fs := &Files{byName: map[string]*file{}}
	for name, data := range docs {
		if f := parseFile(data); f != nil {
			fs.byName[name] = f
		}
	}
	return fs
}

func readLimited(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, errors.New("too large")
	}
	return data, nil
}

func parseFile(data []byte) (f *file) {
	defer func() {
		// The YAML parser is not ours: a panic on odd input leaves the file out.
		if recover() != nil {
			f = nil
		}
	}()
	f = &file{lines: bytes.Split(data, []byte("\n")), keys: map[[2]int]*yaml.Node{}, values: map[[2]int]*yaml.Node{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			break
		}
		f.index(&doc, 0)
	}
	return f
}

func (f *file) index(n *yaml.Node, depth int) {
	if n == nil || depth > 200 {
		return
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f.keys[[2]int{k.Line, k.Column}] = v
			f.values[[2]int{v.Line, v.Column}] = v
		}
	}
	for _, c := range n.Content {
		f.index(c, depth+1)
	}
}

// keyValue is the unresolved value of the mapping key at p; nil when unknown.
func (fs *Files) keyValue(p config.Pos) *yaml.Node {
	if fs == nil {
		return nil
	}
	if f := fs.byName[p.File]; f != nil {
		return f.keys[[2]int{p.Line, p.Col}]
	}
	return nil
}

// valueAt is the unresolved mapping value at p; nil when unknown.
func (fs *Files) valueAt(p config.Pos) *yaml.Node {
	if fs == nil {
		return nil
	}
	if f := fs.byName[p.File]; f != nil {
		return f.values[[2]int{p.Line, p.Col}]
	}
	return nil
}

// maxSnippetLines bounds a node's YAML text on the page.
const maxSnippetLines = 200

// Snippet is the text of the YAML element starting at p, as written: its
// first line and every following line indented deeper than p's column (a
// step's keys, a block scalar). ok is false when the file was not read.
func (fs *Files) Snippet(p config.Pos) (text string, truncated, ok bool) {
	if fs == nil || p.Line <= 0 {
		return "", false, false
	}
	f := fs.byName[p.File]
	if f == nil || p.Line > len(f.lines) {
		return "", false, false
	}
	out := []string{strings.TrimRight(string(f.lines[p.Line-1]), "\r")}
	blank := 0
	for i := p.Line; i < len(f.lines); i++ {
		line := strings.TrimRight(string(f.lines[i]), "\r")
		if strings.TrimSpace(line) == "" {
			blank++
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if indent < p.Col-1 {
			break
		}
		if len(out)+blank >= maxSnippetLines {
			return dedent(out), true, true
		}
		for ; blank > 0; blank-- {
			out = append(out, "")
		}
		out = append(out, line)
	}
	return dedent(out), false, true
}

// dedent removes the indentation common to lines after the first, and the
// first line's up to its "- " so that the snippet reads as a YAML list item.
func dedent(lines []string) string {
	first := lines[0]
	ind := len(first) - len(strings.TrimLeft(first, " "))
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if li := len(l) - len(strings.TrimLeft(l, " ")); li < ind {
			ind = li
		}
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if len(l) >= ind {
			l = l[ind:]
		}
		b.WriteString(l)
	}
	return b.String()
}

// String names the files read, for messages.
func (fs *Files) String() string {
	if fs == nil {
		return "no files"
	}
	return fmt.Sprintf("%d files", len(fs.byName))
}
