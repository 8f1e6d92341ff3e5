package benchfigures

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSourceFindsFigures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		comment string
		want    string // the reported figure
	}{
		{"// BenchmarkX runs at 118 ns/op", "118 ns/op"},
		{"// 17.9 KB/op before the change", "17.9 KB/op"},
		{"// down to 232 allocs/op", "232 allocs/op"},
		{"// the limit serves 18,181 req/s", "18,181 req/s"},
		{"// about 40k records/s", "about 40k records/s"},
		{"// reads 120 MB/s from disk", "120 MB/s"},
		{"// 500 rps with one core", "500 rps"},
		{"// median req/s 700", "req/s 700"},
		{"// 81 % of the bytes a call allocated", "81 % of the bytes"},
		{"// this is 30% faster", "30% faster"},
		{"// slower by 12 % on the shared machine", "slower by 12 %"},
		{"// 3x faster than the SDK", "3x faster"},
		{"// 2.5× the throughput", "2.5× the throughput"},
		{"// 4 times as fast", "4 times as fast"},
		{"// it collected 60–70 times a second", "60–70 times a second"},
		{"// 50 collections per second", "50 collections per second"},
		{"// parsing it took 4 ms", "took 4 ms"},
		{"// squaring it takes ~2 s", "takes ~2 s"},
		{"// an 800 KB select list took seconds", "took seconds"},
		{"// the walk was ~30 allocations per tools/call", "~30 allocations per tools/call"},
		{"// ≈7.4 KB per call on the server", "≈7.4 KB per call"},
		{"/* a block comment: 120 ns/op */", "120 ns/op"},
		{"x := 1 // a trailing comment: 3x faster", "3x faster"},
		// Broken across comment lines, as gofmt'd prose often is.
		{"// the decoders were 81\n// % of the bytes", "81 % of the bytes"},
		{"// it is 3x\n// faster", "3x faster"},
	} {
		got := Source("x.go", []byte("package p\n\n"+tc.comment+"\n"))
		if len(got) != 1 || got[0].Match != tc.want {
			t.Errorf("%q: found %v, want one finding %q", tc.comment, got, tc.want)
		}
	}
}

func TestSourceLeavesOtherNumbersAlone(t *testing.T) {
	t.Parallel()
	for _, comment := range []string{
		"// MaxBodyBytes: 0 means the default (4 MiB), -1 no limit.",
		"// Duration reads a duration option (\"30s\", \"500ms\", or milliseconds).",
		"// looksBinary: a NUL byte, or more than 10% of its runes are control characters",
		"// Goal: ≤ 5 µs and ≤ 20 allocations.",
		"// own overhead per call (issue 17: ≤ 40 µs)",
		"// ns/op is wall time per run with 100 in flight",
		"// a '/' in it is %2F",
		"// time.Sleep(400 * time.Millisecond) // 4× every timeout",
		"// One allocation per request: the writer holds its controller",
		"// the bucket refills one token per second",
		"// 64 MiB is an eighth of a 512 MiB container",
		"// a batch of 3 calls takes 3 of the 8 left",
		"// waitSteady waits until n stops growing for 200 ms (at most 10 s).",
		"// BENCHMARKS.md has the figures.",
	} {
		if got := Source("x.go", []byte("package p\n\n"+comment+"\n")); len(got) != 0 {
			t.Errorf("%q: found %v, want nothing", comment, got)
		}
	}
}

// Figures in code are not comments: strings, and a // inside a string.
func TestSourceReadsOnlyComments(t *testing.T) {
	t.Parallel()
	src := "package p\n\nconst a = \"81 % of the bytes\"\nvar b = `3x faster // 120 ns/op`\nvar c = '%' // fine\n"
	if got := Source("x.go", []byte(src)); len(got) != 0 {
		t.Fatalf("found %v in code", got)
	}
}

// The position is the figure's own, also on the second line of a run and inside a
// block comment, so an editor jumps to it.
func TestSourcePositions(t *testing.T) {
	t.Parallel()
	src := "package p\n\n// first line of prose,\n//\tsecond: 3x faster\n\n/*\n  block\n  at 120 ns/op\n*/\n"
	got := Source("dir/x.go", []byte(src))
	if len(got) != 2 {
		t.Fatalf("findings %v, want 2", got)
	}
	if p := got[0].Pos; p.Filename != "dir/x.go" || p.Line != 4 || p.Column != 12 {
		t.Errorf("line comment figure at %v, want dir/x.go:4:12", p)
	}
	if p := got[1].Pos; p.Line != 8 || p.Column != 6 {
		t.Errorf("block comment figure at %v, want line 8 column 6", p)
	}
	if s := got[0].String(); !strings.HasPrefix(s, "dir/x.go:4:12: comment states a benchmark figure \"3x faster\"") || !strings.Contains(s, "BENCHMARKS.md") {
		t.Errorf("message %q", s)
	}
}

// A file that does not compile (a half-written file, a fixture) is read as far as
// it goes, without a panic.
func TestSourceOfBrokenFiles(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"",
		"// 3x faster",
		"package p\nfunc ( {{{ // 3x faster\n",
		"package p\n/* unterminated 3x faster",
		"package p\nvar s = \"unterminated // 3x faster\n",
		"\x00\xff\xfe // 3x faster",
		strings.Repeat("//\n", 10000) + "// 3x faster",
	} {
		_ = Source("broken.go", []byte(src))
	}
	if got := Source("broken.go", []byte("package p\nfunc ( {{{ // 3x faster\n")); len(got) != 1 {
		t.Errorf("figure after a syntax error: %v", got)
	}
}

func TestTreeSkipsHiddenDirsAndOtherFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/b/x_test.go", "package b\n// 3x faster\n")
	write(".tools/y.go", "package y\n// 3x faster\n")
	write("_old/z.go", "package z\n// 3x faster\n")
	write("a/notes.md", "3x faster\n")
	got, err := Tree(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Pos.Filename != "a/b/x_test.go" || got[0].Pos.Line != 2 {
		t.Fatalf("findings %v, want only a/b/x_test.go:2", got)
	}
	if _, err := Tree(filepath.Join(root, "missing")); err == nil {
		t.Error("a missing root is no error")
	}
}
