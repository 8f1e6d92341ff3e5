package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// internalReference matches what a reader of the docs cannot follow: sections of the
// product specification ("spec §12.1", "§4.7"), its numbered recipes ("Recipe 2") and
// Go test names. Such cross-references belong in the tests, as comments next to the
// behaviour they prove; the docs describe tasks.
var internalReference = regexp.MustCompile(`spec §|§\s?[0-9]|Recipe [0-9]|\bTest[A-Z][A-Za-z0-9_]*`)

// userDocs lists README.md and every Markdown file under docs/, generated ones included
// (their text comes from the component and step specs, which must not cite the spec
// either).
func userDocs(t *testing.T) []string {
	t.Helper()
	files := []string{"../../README.md"}
	err := filepath.WalkDir("../../docs", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The docs are written for users, who have neither the product specification nor the
// test sources: no "spec §…", "§n", "Recipe n" or test name in README.md or docs/.
// HTML comments are skipped: a generated file's header names the command (a test run)
// that regenerates it, for whoever edits the generator.
func TestDocsCiteNoSpecSectionOrTestName(t *testing.T) {
	t.Parallel()
	for _, f := range userDocs(t) {
		src, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		scanner := bufio.NewScanner(src)
		scanner.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; scanner.Scan(); n++ {
			line := scanner.Text()
			if strings.HasPrefix(strings.TrimSpace(line), "<!--") {
				continue
			}
			if m := internalReference.FindString(line); m != "" {
				t.Errorf("%s:%d: %q cites what users do not have; describe the task instead (put the cross-reference in the test that proves it): %s",
					strings.TrimPrefix(f, "../../"), n, m, strings.TrimSpace(line))
			}
		}
		src.Close()
		if err := scanner.Err(); err != nil {
			t.Fatal(err)
		}
	}
}
