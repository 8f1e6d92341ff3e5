package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/componenttest"
	"github.com/arvenza/helix/internal/component/file"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{
			Producer: true, Consumer: true, Pattern: exchange.InOnly, StopDrains: true, Stress: true,
		},
		Setup: func(t *testing.T) *componenttest.Fixture {
			dir := t.TempDir()
			comp := file.New(nil)
			var seq atomic.Int64
			return &componenttest.Fixture{
				Component: comp,
				URI:       "file://" + dir + "?period=10ms",
				// Each message the producer writes gets its own name.
				Prepare: func(ex *exchange.Exchange) {
					ex.In().SetHeader(file.HeaderFileName, fmt.Sprintf("msg-%04d.txt", seq.Add(1)))
				},
				// The outside world of a file producer is whoever reads the directory:
				// here a file consumer of its own component instance, which also proves
				// that written files appear whole.
				Listen: func() <-chan componenttest.Message {
					ch := make(chan componenttest.Message, 256)
					c, err := endpoint(t, file.New(nil), "file://"+dir+"?period=10ms").CreateConsumer(
						component.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
							ch <- componenttest.Message{Body: exchange.Stringify(ex.In().Body())}
							return nil
						}))
					if err != nil {
						t.Fatal(err)
					}
					if err := c.Start(context.Background()); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = c.Stop(context.Background()) })
					return ch
				},
				Send: func(_ context.Context, m componenttest.Message) (componenttest.Message, error) {
					return componenttest.Message{}, dropFile(dir, fmt.Sprintf("in-%04d.txt", seq.Add(1)), m.Body)
				},
			}
		},
	})
}

// dropFile writes name the way a careful producer does: hidden first, then renamed.
func dropFile(dir, name, body string) error {
	tmp := filepath.Join(dir, "."+name+".part")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

func endpoint(t *testing.T, c component.Component, raw string) component.Endpoint {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := c.CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func process(t *testing.T, raw string, ex *exchange.Exchange) error {
	t.Helper()
	p, err := endpoint(t, file.New(nil), raw).CreateProducer()
	if err != nil {
		t.Fatal(err)
	}
	return p.Process(context.Background(), ex)
}

func TestTraversalRefused(t *testing.T) {
	root := t.TempDir()
	base := filepath.Join(root, "base")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{base, outside, filepath.Join(base, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "ok.txt"), []byte("fine"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "sub", "deep.txt"), []byte("deep"), 0o644))
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(base, "link-out.txt")))
	must(t, os.Symlink(outside, filepath.Join(base, "dir-out")))
	must(t, os.Symlink(filepath.Join(base, "ok.txt"), filepath.Join(base, "link-in.txt")))

	tests := []struct {
		name     string
		fileName string
		op       string
		want     string // body after a read; "" when refused
	}{
		{"plain name", "ok.txt", "read", "fine"},
		{"subdirectory", "sub/deep.txt", "read", "deep"},
		{"dot segments that stay inside", "sub/../ok.txt", "read", "fine"},
		{"absolute inside base", filepath.Join(base, "ok.txt"), "read", "fine"},
		{"symlink inside base", "link-in.txt", "read", "fine"},
		{"parent", "../outside/secret.txt", "read", ""},
		{"deep parent", "sub/../../outside/secret.txt", "read", ""},
		{"absolute outside", filepath.Join(outside, "secret.txt"), "read", ""},
		{"etc passwd", "/etc/passwd", "read", ""},
		{"symlink to outside file", "link-out.txt", "read", ""},
		{"through symlinked directory", "dir-out/secret.txt", "read", ""},
		{"write through symlinked directory", "dir-out/new.txt", "write", ""},
		{"write parent", "../evil.txt", "write", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ex := exchange.NewWithBody(exchange.InOut, "payload")
			u := "file://" + base + "?operation=" + tc.op + "&fileName=" + tc.fileName
			err := process(t, u, ex)
			if tc.want == "" {
				if !errors.Is(err, file.ErrOutsideBase) {
					t.Fatalf("got %v, want an error wrapping file.ErrOutsideBase", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ex.In().Body(); got != tc.want {
				t.Fatalf("body %v, want %q", got, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("a refused write created a file outside the base directory")
	}
	if _, err := os.Stat(filepath.Join(root, "evil.txt")); err == nil {
		t.Fatal("a refused write created a file outside the base directory")
	}
}

// file:///?fileName=${payload.path}&allowEscape=true (spec recipe 3, with the opt-in)
// reads an absolute path.
func TestRootBaseReadsAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data.csv")
	must(t, os.WriteFile(path, []byte("a,b\n1,2\n"), 0o644))
	hc := engine.NewContext("file-test")
	hc.AddComponent("file", file.New(hc.Logger))
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "read", ToURIs: []string{"file:///?fileName=${payload.path}&operation=read&allowEscape=true"}}))
	ctx := context.Background()
	must(t, hc.Start(ctx))
	defer hc.Stop(ctx)
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"path": path})
	if err := hc.Run(ctx, "read", ex); err != nil {
		t.Fatal(err)
	}
	if ex.In().Body() != "a,b\n1,2\n" {
		t.Fatalf("body %q", ex.In().Body())
	}
	// Relative to the base directory (the file-system root here), like every
	// HelixFileName.
	if got, want := ex.In().HeaderString(file.HeaderFileName), strings.TrimPrefix(filepath.ToSlash(path), "/"); got != want {
		t.Fatalf("HelixFileName %q, want %q", got, want)
	}
}

func TestWriteOptions(t *testing.T) {
	tests := []struct {
		name      string
		options   string
		header    string
		bodies    []any
		want      string
		wantErr   string
		wantExist bool
	}{
		{"override", "fileName=out/a.txt", "", []any{"one", "two"}, "two", "", true},
		{"append", "fileName=a.txt&fileExist=append", "", []any{"one", "two"}, "onetwo", "", true},
		{"fail when exists", "fileName=a.txt&fileExist=fail", "", []any{"one", "two"}, "one", "fileExist=fail", true},
		{"name from header", "", "h.txt", []any{"x"}, "x", "", true},
		{"map as JSON", "fileName=j.json", "", []any{map[string]any{"k": 1}}, `{"k":1}`, "", true},
		{"bytes", "fileName=b.bin", "", []any{[]byte{0x41, 0x42}}, "AB", "", true},
		{"no name at all", "", "", []any{"x"}, "", "no file name", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "created")
			var err error
			for _, b := range tc.bodies {
				ex := exchange.NewWithBody(exchange.InOnly, b)
				if tc.header != "" {
					ex.In().SetHeader(file.HeaderFileName, tc.header)
				}
				if err = process(t, "file://"+dir+"?"+tc.options, ex); err != nil {
					break
				}
				if ex.In().Body() == nil {
					t.Fatal("write cleared the body")
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !tc.wantExist {
				return
			}
			name := tc.header
			if name == "" {
				u, _ := uri.Parse("file://x?" + tc.options)
				name = u.Params.Get("fileName")
			}
			got, rerr := os.ReadFile(filepath.Join(dir, name))
			if rerr != nil {
				t.Fatal(rerr)
			}
			if string(got) != tc.want {
				t.Fatalf("file holds %q, want %q", got, tc.want)
			}
			entries, _ := os.ReadDir(filepath.Dir(filepath.Join(dir, name)))
			for _, e := range entries {
				if strings.Contains(e.Name(), ".tmp-") {
					t.Fatalf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

func TestBadOptions(t *testing.T) {
	for _, raw := range []string{
		"file://x?operation=delete", "file://x?fileExist=maybe", "file://x?period=0", "file://x?period=fast", "file://x?delete=perhaps",
	} {
		u, _ := uri.Parse(raw)
		if _, err := file.New(nil).CreateEndpoint(u); err == nil {
			t.Errorf("%s: want an error", raw)
		}
	}
}

// The consumer moves processed files to .done/, failed ones to .error/, deletes with
// delete=true, sets HelixFileName and ignores hidden files.
func TestConsumerMovesFiles(t *testing.T) {
	for _, del := range []bool{false, true} {
		t.Run(fmt.Sprintf("delete=%v", del), func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "good.txt"), []byte("good"), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("bad"), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, ".hidden"), []byte("hidden"), 0o644))
			must(t, os.Mkdir(filepath.Join(dir, "subdir"), 0o755))
			seen := make(chan string, 10)
			c, err := endpoint(t, file.New(nil), fmt.Sprintf("file://%s?period=10ms&delete=%v", dir, del)).CreateConsumer(
				component.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
					seen <- ex.In().HeaderString(file.HeaderFileName) + "=" + exchange.Stringify(ex.In().Body())
					if ex.In().Body() == "bad" {
						return errors.New("refused")
					}
					return nil
				}))
			must(t, err)
			must(t, c.Start(context.Background()))
			got := map[string]bool{}
			for range 2 {
				select {
				case s := <-seen:
					got[s] = true
				case <-time.After(componenttest.Timeout):
					t.Fatal("consumer did not pick up both files")
				}
			}
			must(t, c.Stop(context.Background()))
			if !got["good.txt=good"] || !got["bad.txt=bad"] {
				t.Fatalf("exchanges %v", got)
			}
			select {
			case s := <-seen:
				t.Fatalf("unexpected exchange %s (hidden files and directories are skipped)", s)
			default:
			}
			exists := func(p string) bool { _, err := os.Stat(filepath.Join(dir, p)); return err == nil }
			if exists("good.txt") || exists("bad.txt") {
				t.Fatal("processed files are still in the directory")
			}
			if exists(".done/good.txt") == del {
				t.Fatalf(".done/good.txt exists=%v with delete=%v", !del, del)
			}
			if !exists(".error/bad.txt") {
				t.Fatal("failed file not moved to .error/")
			}
			if !exists(".hidden") {
				t.Fatal("hidden file was touched")
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A fileName written as a placeholder is data from the exchange (a tool argument, an
// HTTP body): it must name a file inside the endpoint's directory — relative, no "..",
// no symlink out — unless the author opts in with allowEscape=true. Spec recipe 3
// (file:///?fileName=${payload.path}) would otherwise let any caller read /etc/….
func TestPlaceholderFileNameStaysInDirectory(t *testing.T) {
	root := t.TempDir()
	base := filepath.Join(root, "base")
	outside := filepath.Join(root, "outside")
	must(t, os.MkdirAll(filepath.Join(base, "sub"), 0o755))
	must(t, os.MkdirAll(outside, 0o755))
	secret := filepath.Join(outside, "secret.txt")
	must(t, os.WriteFile(secret, []byte("secret"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "ok.txt"), []byte("fine"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "sub", "deep.txt"), []byte("deep"), 0o644))
	must(t, os.Symlink(secret, filepath.Join(base, "link-out.txt")))

	hc := engine.NewContext("file-test")
	hc.AddComponent("file", file.New(hc.Logger))
	routes := map[string]string{
		"base":       "file://" + base + "?operation=read&fileName=${payload.path}",
		"root":       "file:///?operation=read&fileName=${payload.path}",
		"rootEscape": "file:///?operation=read&fileName=${payload.path}&allowEscape=true",
		"baseEscape": "file://" + base + "?operation=read&allowEscape=true&fileName=${payload.path}",
		"write":      "file://" + base + "?fileName=${payload.path}",
	}
	for id, u := range routes {
		must(t, hc.AddWorkflow(&engine.Workflow{ID: id, ToURIs: []string{u}}))
	}
	ctx := context.Background()
	must(t, hc.Start(ctx))
	defer hc.Stop(ctx)

	tests := []struct {
		route, path string
		want        string // body after a read; "" when refused
	}{
		{"base", "ok.txt", "fine"},
		{"base", "sub/deep.txt", "fine-deep"},
		{"base", "../outside/secret.txt", ""},
		{"base", "sub/../../base/ok.txt", ""}, // leaves and comes back: still ".."
		{"base", filepath.Join(base, "ok.txt"), ""},
		{"base", secret, ""},
		{"base", "link-out.txt", ""},
		{"root", secret, ""},
		{"root", strings.TrimPrefix(secret, "/"), ""}, // file:/// is no directory to confine to
		{"root", secret + "&allowEscape=true", ""},
		{"rootEscape", secret, "secret"},
		{"baseEscape", "../outside/secret.txt", "secret"},
		{"baseEscape", "ok.txt", "fine"},
		{"write", "../outside/new.txt", ""},
	}
	for _, tc := range tests {
		t.Run(tc.route+" "+tc.path, func(t *testing.T) {
			ex := exchange.NewWithBody(exchange.InOut, map[string]any{"path": tc.path})
			err := hc.Run(ctx, tc.route, ex)
			if tc.want == "" {
				if !errors.Is(err, file.ErrOutsideBase) {
					t.Fatalf("got %v (body %v), want an error wrapping file.ErrOutsideBase", err, ex.In().Body())
				}
				if tc.route != "rootEscape" && !strings.Contains(err.Error(), "allowEscape=true") {
					t.Fatalf("error %q does not name the allowEscape=true opt-in", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == "fine-deep" {
				want = "deep"
			}
			if got := ex.In().Body(); got != want {
				t.Fatalf("body %v, want %q", got, want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("a refused write created a file outside the directory")
	}
}

// allowEscape cannot itself come from the exchange.
func TestAllowEscapeMustBeWritten(t *testing.T) {
	u, _ := uri.Parse("file:///d?fileName=x&allowEscape=true")
	u.Template = "file:///d?fileName=x&allowEscape=${body.x}"
	if _, err := file.New(nil).CreateEndpoint(u); err == nil || !strings.Contains(err.Error(), "allowEscape") {
		t.Fatalf("got %v", err)
	}
}

// A directory written with a placeholder is chosen by the caller just as well; it is
// refused unless allowEscape=true.
func TestPlaceholderDirectoryRefused(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "x.txt"), []byte("x"), 0o644))
	hc := engine.NewContext("file-test")
	hc.AddComponent("file", file.New(hc.Logger))
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "dir", ToURIs: []string{"file://${payload.dir}?operation=read&fileName=x.txt"}}))
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "dirEscape", ToURIs: []string{"file://${payload.dir}?operation=read&fileName=x.txt&allowEscape=true"}}))
	ctx := context.Background()
	must(t, hc.Start(ctx))
	defer hc.Stop(ctx)
	err := hc.Run(ctx, "dir", exchange.NewWithBody(exchange.InOut, map[string]any{"dir": dir}))
	if !errors.Is(err, file.ErrOutsideBase) || !strings.Contains(err.Error(), "allowEscape=true") {
		t.Fatalf("got %v, want a refusal naming allowEscape=true", err)
	}
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"dir": dir})
	if err := hc.Run(ctx, "dirEscape", ex); err != nil || ex.In().Body() != "x" {
		t.Fatalf("with allowEscape=true: %v %v", err, ex.In().Body())
	}
}

// HelixFileName names the file relative to the base directory, as the caller
// sees it: not the absolute name it may have been given, not the target of a
// symbolic link (the base's or one inside it). Errors do not show a link's
// target either.
func TestResultNamesAreRelativeToTheBase(t *testing.T) {
	tmp := t.TempDir()
	real := filepath.Join(tmp, "real-data")
	must(t, os.MkdirAll(filepath.Join(real, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(real, "sub", "x.txt"), []byte("x"), 0o644))
	base := filepath.Join(tmp, "data")
	must(t, os.Symlink(real, base))
	must(t, os.Symlink("sub", filepath.Join(real, "alias")))
	secret := filepath.Join(tmp, "hidden-target")
	must(t, os.MkdirAll(secret, 0o755))
	must(t, os.Symlink(secret, filepath.Join(real, "out")))

	for _, tc := range []struct{ uri, name, want string }{
		{"file://" + base + "?operation=read", filepath.Join(base, "sub", "x.txt"), "sub/x.txt"},
		{"file://" + base + "?operation=read", "sub/../sub/./x.txt", "sub/x.txt"},
		{"file://" + base + "?operation=read", "alias/x.txt", "alias/x.txt"},
		{"file://" + base + "?operation=write", filepath.Join(base, "sub", "y.txt"), "sub/y.txt"},
		{"file:///?operation=read&allowEscape=true", filepath.Join(real, "sub", "x.txt"), strings.TrimPrefix(filepath.ToSlash(filepath.Join(real, "sub", "x.txt")), "/")},
	} {
		ex := exchange.NewWithBody(exchange.InOut, "y")
		ex.In().SetHeader(file.HeaderFileName, tc.name)
		if err := process(t, tc.uri, ex); err != nil {
			t.Fatalf("%s %s: %v", tc.uri, tc.name, err)
		}
		if got := ex.In().HeaderString(file.HeaderFileName); got != tc.want {
			t.Errorf("%s %s: HelixFileName %q, want %q", tc.uri, tc.name, got, tc.want)
		}
	}
	ex := exchange.NewWithBody(exchange.InOut, nil)
	ex.In().SetHeader(file.HeaderFileName, "out/z.txt")
	err := process(t, "file://"+base+"?operation=read", ex)
	if err == nil || strings.Contains(err.Error(), "hidden-target") {
		t.Fatalf("a name through a link out of the base: %v", err)
	}
}
