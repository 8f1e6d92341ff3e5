package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitTemplatesValidateAndPassTheirTests writes every template and runs what a
// new user runs next: helix validate and helix test on the file written.
func TestInitTemplatesValidateAndPassTheirTests(t *testing.T) {
	t.Parallel()
	for _, template := range []string{"", "webhook", "mcp-tools", "agent", "rag"} {
		name := template
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "helix.yaml")
			args := []string{"init", file}
			if template != "" {
				args = append(args, "--template", template)
			}
			code, stdout, stderr := execute(t, args...)
			if code != ExitOK {
				t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
			}
			want := template
			if want == "" {
				want = "webhook"
			}
			for _, s := range []string{"wrote " + file + " (" + want + " template: ", "helix test " + file, "helix run " + file} {
				if !strings.Contains(stdout, s) {
					t.Errorf("init's output lacks %q:\n%s", s, stdout)
				}
			}
			written, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			embedded, _ := templates.ReadFile("templates/" + want + ".yaml")
			if string(written) != string(embedded) {
				t.Errorf("the file written is not the %s template", want)
			}
			if code, stdout, stderr := execute(t, "validate", file); code != ExitOK || stderr != "" {
				t.Errorf("validate: exit %d\n%s%s", code, stdout, stderr)
			}
			code, stdout, stderr = execute(t, "test", file)
			if code != ExitOK || !strings.Contains(stdout, "ok: ") || strings.Contains(stdout, "FAIL") {
				t.Errorf("test: exit %d\n%s%s", code, stdout, stderr)
			}
		})
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "helix.yaml")
	if err := os.WriteFile(file, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := execute(t, "init", file)
	if code != ExitConfig || !strings.Contains(stderr, file+" already exists") || !strings.Contains(stderr, "--force") {
		t.Errorf("exit %d, want %d and a message naming --force\nstdout: %s\nstderr: %s", code, ExitConfig, stdout, stderr)
	}
	if b, _ := os.ReadFile(file); string(b) != "# mine\n" {
		t.Errorf("the existing file was changed: %q", b)
	}
	code, _, stderr = execute(t, "init", "--force", "--template", "mcp-tools", file)
	if code != ExitOK {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "convert_temperature") {
		t.Errorf("--force did not write the template:\n%s", b)
	}
}

func TestInitWritesHelixYAMLInTheWorkingDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	code, stdout, stderr := execute(t, "init")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat("helix.yaml"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "helix test helix.yaml") {
		t.Errorf("output:\n%s", stdout)
	}
}

func TestInitRejectsBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown template", []string{"init", "--template", "webhok", filepath.Join(dir, "a.yaml")}, `unknown template "webhok" (did you mean "webhook"?): use webhook, mcp-tools, agent or rag`},
		{"a directory", []string{"init", dir}, "is a directory"},
		{"a missing parent", []string{"init", filepath.Join(dir, "no", "such", "helix.yaml")}, "no such file or directory"},
		{"two files", []string{"init", "a.yaml", "b.yaml"}, "accepts at most 1 arg"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(t, tc.args...)
			if code != ExitConfig || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, ExitConfig, tc.want)
			}
		})
	}
}
