package cli

import (
	"strings"
	"testing"
)

// FuzzGatewayAddToFile edits arbitrary files: it never panics, and an edit it
// reports as done inserted exactly the lines it printed and changed nothing
// else (checkAdded has also read the result back as the old file plus the
// upstream).
func FuzzGatewayAddToFile(f *testing.F) {
	for _, seed := range []string{
		"",
		"# only a comment\n",
		"mcps:\n  - id: gw\n    upstreams:\n      - id: a\n        url: http://a/mcp\n    # next\n    policies: []\n",
		"mcps:\n- id: tools\n  addr: \"127.0.0.1:0\"",
		"mcps:\n  - id: gw\n    upstreams:   # none yet\n    addr: x\n",
		"mcps:\nworkflows: []\n",
		"helix:\n  mcp:\n    servers:\n      - id: inner\n        upstreams:\n          - {id: a, url: u}\nmcps:\n  - id: outer\n",
		"mcps:\n  - id: gw\n    upstreams:\n      - id: a\n        note: |\n          text\n          # not a comment\n\n",
		"mcps:\r\n  - id: gateway\r\n",
		"mcps: [{id: gw, upstreams: [{id: a}]}]\n",
		"a: &x {b: 1}\nc: *x\nmcps:\n  - id: gateway\n    <<: {addr: y}\n",
		"mcps:\n  - id: gw\n    upstreams:\n    - id: a\n      url: u\n  - id: other\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		added, err := addUpstreamToFile("f.yaml", []byte(data), "", "tickets", []string{"url: http://x/mcp"})
		if err != nil {
			return
		}
		crlf := strings.Contains(data, "\r\n") // the edit keeps a file's Windows line ends
		norm := func(s string) string {
			if crlf {
				s = strings.ReplaceAll(s, "\r\n", "\n")
			}
			return strings.TrimSuffix(s, "\n")
		}
		lines := strings.Split(norm(string(added.data)), "\n")
		from := added.line - 1
		if from < 0 || from+len(added.lines) > len(lines) {
			t.Fatalf("reported lines %d..%d outside a file of %d", added.line, added.line+len(added.lines), len(lines))
		}
		for i, l := range added.lines {
			if lines[from+i] != l {
				t.Fatalf("line %d is %q, reported %q", from+i+1, lines[from+i], l)
			}
		}
		rest := append(append([]string{}, lines[:from]...), lines[from+len(added.lines):]...)
		got, want := strings.Join(rest, "\n"), norm(data)
		if got != want && from > 0 && lines[from-1] == "" {
			// A new mcps: section is set off by a blank line.
			got = strings.Join(append(append([]string{}, lines[:from-1]...), lines[from+len(added.lines):]...), "\n")
		}
		if got != want {
			t.Fatalf("the rest of the file changed:\n%q\nwant\n%q", got, want)
		}
	})
}
