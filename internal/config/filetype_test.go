package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file that is not a Helix YAML file gets one message saying what it is and what
// to give helix instead, not a YAML parser's complaint about its third line.
func TestFileThatIsNotAHelixConfigGetsOneClearMessage(t *testing.T) {
	binary := append([]byte("\x7fELF\x02\x01\x01\x00\x00\x00"), make([]byte, 64)...)
	cases := []struct {
		name string
		data string
		want string // the whole first line of the only error
	}{
		{"README.md", "# Helix\n\n\tgo install ./cmd/helix\n\nSee [the docs](docs/).\n",
			"README.md: this looks like Markdown, not a Helix YAML file"},
		{"notes.yaml", "# Notes\n\nSome text here.\n\n```yaml\nworkflows: []\n```\n",
			"notes.yaml: this looks like Markdown, not a Helix YAML file"},
		{"empty.yaml", "", "empty.yaml: the file is empty"},
		{"blank.yaml", "\n  \n\n", "blank.yaml: the file is empty"},
		{"comments.yaml", "# workflows:\n#   - id: a\n", "comments.yaml: the file holds only comments"},
		{"app", string(binary), "app: this is a binary file, not a Helix YAML file"},
		{"latin1.yaml", "workflows:\n  - id: caf\xe9\n", "latin1.yaml:2: the file is not UTF-8 text"},
		{"list.yaml", "- id: a\n  trigger: direct://a\n", "list.yaml:1:1: the file is a YAML list; a Helix file is a mapping"},
		{"text.yaml", "hello world\n", `text.yaml:1:1: the file is plain text ("hello world"); a Helix file is a mapping`},
		{"bad.json", "{\"workflows\": [1,}", "bad.json:1:18: invalid JSON: invalid character '}' looking for beginning of value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadBytes(c.name, []byte(c.data))
			if err == nil {
				t.Fatal("no error")
			}
			errs := err.(Errors)
			if len(errs) != 1 {
				t.Fatalf("want one error, got:\n%v", errs)
			}
			if got := errs[0].Pos.String() + ": " + errs[0].Msg; !strings.HasPrefix(got, c.want) {
				t.Errorf("got  %s\nwant %s…", got, c.want)
			}
			if errs[0].Hint == "" {
				t.Errorf("no hint saying what to do: %v", errs[0])
			}
		})
	}
}

// JSON is YAML: a JSON configuration, tab-indented as JSON tools write it, loads.
func TestJSONConfigLoads(t *testing.T) {
	src := "{\n\t\"workflows\": [\n\t\t{\"id\": \"a\", \"trigger\": \"direct://a\", \"steps\": [{\"log\": \"hi\"}]}\n\t]\n}\n"
	cfg, err := LoadBytes("helix.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Workflows) != 1 || cfg.Workflows[0].ID != "a" {
		t.Fatalf("workflows = %+v", cfg.Workflows)
	}
}

// Load from disk says the same about a Markdown file given by mistake.
func TestLoadMarkdownFileFromDisk(t *testing.T) {
	file := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(file, []byte("# Title\n\nworkflows are described below.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(file)
	if err == nil || !strings.Contains(err.Error(), "README.md: this looks like Markdown, not a Helix YAML file") {
		t.Fatalf("err = %v", err)
	}
}

// A YAML block taken from a Markdown document and loaded in memory under the
// document's name is judged by its content.
func TestLoadBytesJudgesContentNotName(t *testing.T) {
	if _, err := LoadBytes("docs/configuration.md:12", []byte("workflows:\n  - id: a\n    trigger: direct://a\n    steps:\n      - log: hi\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBytes("docs/configuration.md", []byte("workflows:\n  - id: a\n    trigger: direct://a\n    steps:\n      - log: hi\n")); err != nil {
		t.Fatal(err)
	}
}
