package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/component/all"
)

func TestComponentsList(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := execute(t, "components")
	if code != ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, s := range all.Schemes() {
		if !strings.Contains(stdout, s.Scheme) {
			t.Errorf("the list does not name %s", s.Scheme)
		}
	}
	for _, want := range []string{"http, https  target", "timer", "trigger", "agent"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the list lacks %q:\n%s", want, stdout)
		}
	}
}

func TestComponentsScheme(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		arg  string
		want []string
	}{
		{"timer", []string{"timer:// — fire exchanges on a schedule", "timer://name[?options]", "consumer: use it as a trigger",
			"period", "duration", "1s", "repeatCount", "HelixTimerName", "HelixTimerCounter", "any other option is an error", "timer://tick?period=5s"}},
		{"https://", []string{"http:// — send an HTTP request", "also:    https://", "throwExceptionOnFailure", "other query parameters: sent to the server", "HelixHttpResponseCode"}},
		{"log", []string{"level", "debug|info|warn|error", "showHeaders"}},
		{"direct", []string{"none: direct:// takes no options"}},
		{"file", []string{"fileName", "override|append|fail", "producer", "consumer", "HelixFileName"}},
		{"http-server", []string{"maxBodyBytes", "consumes", "string (repeatable)", "readTimeout", "HelixHttpMethod"}},
	} {
		code, stdout, stderr := execute(t, "components", tc.arg)
		if code != ExitOK || stderr != "" {
			t.Errorf("components %s: exit %d, stderr %q", tc.arg, code, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("components %s lacks %q:\n%s", tc.arg, w, stdout)
			}
		}
	}
}

func TestComponentsUnknownScheme(t *testing.T) {
	t.Parallel()
	for arg, want := range map[string]string{
		"timr":    `unknown component "timr" (did you mean "timer"?)`,
		"zzzzzzz": "unknown component \"zzzzzzz\" (components: agent, direct, file, http",
	} {
		code, stdout, stderr := execute(t, "components", arg)
		if code != ExitConfig || stdout != "" || !strings.Contains(stderr, want) {
			t.Errorf("components %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", arg, code, stdout, stderr, want)
		}
	}
	if code, _, _ := execute(t, "components", "--markdown", t.TempDir(), "timer"); code != ExitConfig {
		t.Errorf("--markdown with a scheme: exit %d, want 2", code)
	}
}

func TestComponentsJSON(t *testing.T) {
	t.Parallel()
	code, stdout, _ := execute(t, "components", "--json", "file")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var one struct {
		Scheme    string `json:"scheme"`
		Direction string `json:"direction"`
		Options   []struct {
			Name, Type, Default, Role string
			Enum                      []string
		} `json:"options"`
		Headers []struct{ Name, Use, Role string } `json:"headers"`
	}
	if err := json.Unmarshal([]byte(stdout), &one); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if one.Scheme != "file" || one.Direction != "both" || len(one.Options) == 0 || len(one.Headers) == 0 {
		t.Fatalf("decoded %+v", one)
	}
	found := false
	for _, o := range one.Options {
		if o.Name == "fileExist" {
			found = o.Type == "enum" && o.Default == "override" && o.Role == "producer" && len(o.Enum) == 3
		}
	}
	if !found {
		t.Errorf("fileExist is not an enum option with its default and values: %+v", one.Options)
	}
	code, stdout, _ = execute(t, "components", "--json")
	var list []struct {
		Scheme string `json:"scheme"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); code != ExitOK || err != nil || len(list) != len(all.Specs()) {
		t.Fatalf("exit %d, %v, %d specs", code, err, len(list))
	}
}

// The pages under docs/components/ are generated from the specs; this test fails
// when they were not regenerated after a spec changed.
func TestComponentDocsUpToDate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "docs", "components")
	pages := markdownPages()
	if *update {
		if err := writeMarkdownPages(dir); err != nil {
			t.Fatal(err)
		}
	}
	onDisk, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	var stale []string
	for _, p := range onDisk {
		if _, ok := pages[filepath.Base(p)]; !ok {
			stale = append(stale, filepath.Base(p)+" (no such component)")
		}
	}
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/components is stale: %s\nregenerate it with: %s (or go test ./internal/cli -run TestComponentDocsUpToDate -update)",
			strings.Join(stale, ", "), regenerateDocs)
	}
}

func TestComponentsMarkdownWritesAndPrunes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gone.md"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := execute(t, "components", "--markdown", dir); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone.md")); !os.IsNotExist(err) {
		t.Error("the page of a component that no longer exists was kept")
	}
	page, err := os.ReadFile(filepath.Join(dir, "timer.md"))
	if err != nil || !strings.Contains(string(page), "| `period` | duration | `1s` | consumer |") {
		t.Errorf("timer.md: %v\n%s", err, page)
	}
	index, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	if !strings.Contains(string(index), "[`http://`, `https://`](http.md)") {
		t.Errorf("README.md:\n%s", index)
	}
}

// helix validate refuses misspelled and mistyped URI options with the position of
// the URI and a did-you-mean, also in targets with per-exchange placeholders, and
// keeps http://'s extra query parameters.
func TestValidateRejectsMisspelledOptions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "typos.yaml")
	src := `workflows:
  - id: tick
    trigger: timer://tick?peroid=5s
    steps:
      - target: log://out?levl=debug
      - target: file:///tmp?fileNam=x
      - target: http://example.com/search?q=otters&timeout=5s
      - target: file://./data?fileNam=${body.name}
      - target: file://./data?fileName=${body.name}&operation=read
  - id: typed
    trigger: timer://t2?period=often
    steps: []
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := execute(t, "validate", path)
	if code != ExitConfig || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{
		path + `:3:14: workflows[0].trigger: timer://tick?peroid=5s: unknown option "peroid" (did you mean "period"?)`,
		path + `:5:17: workflows[0].steps[0]: log://out?levl=debug: unknown option "levl" (did you mean "level"?)`,
		path + `:6:17: workflows[0].steps[1]: file:///tmp?fileNam=x: unknown option "fileNam" (did you mean "fileName"?)`,
		path + `:8:17: workflows[0].steps[3]: file://./data?fileNam=${body.name}: unknown option "fileNam" (did you mean "fileName"?)`,
		path + `:11:14: workflows[1].trigger: timer://t2?period=often: option period="often" is not a duration`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks\n  %s\ngot:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "otters") || strings.Count(stderr, "\n") != 6 {
		t.Errorf("want exactly the five errors and the count, got:\n%s", stderr)
	}
}
