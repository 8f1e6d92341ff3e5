package testtools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestONNXRuntimeLibInstalled checks the library setup-tools.sh installs (or the one
// HELIX_ONNXRUNTIME_LIB names): under make test it must be there.
func TestONNXRuntimeLibInstalled(t *testing.T) {
	lib := ONNXRuntimeLib(t)
	if err := checkELF(lib); err != nil {
		t.Fatal(err)
	}
}

// callONNXRuntimeLib runs ONNXRuntimeLib with a recorder, on a goroutine of its own because
// the recorder's Fatalf and Skipf end the calling goroutine as the real ones do.
func callONNXRuntimeLib(t *testing.T) (*recordingTB, string) {
	rec := &recordingTB{TB: t}
	var got string
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = ONNXRuntimeLib(rec)
	}()
	<-done
	return rec, got
}

func TestONNXRuntimeLibLookup(t *testing.T) {
	tools := t.TempDir()
	inTools := filepath.Join(tools, filepath.FromSlash(onnxRuntimeLibRel))
	if err := os.MkdirAll(filepath.Dir(inTools), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inTools, []byte("\x7fELF\x02\x01\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(other, []byte("\x7fELF\x02\x01\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	notELF := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(notELF, []byte("not a shared library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvToolsDir, tools)

	t.Run("tools dir", func(t *testing.T) {
		t.Setenv(EnvONNXRuntimeLib, "")
		if rec, got := callONNXRuntimeLib(t); rec.failed || rec.skipped || got != inTools {
			t.Fatalf("got %q (failed=%v skipped=%v %s), want %s", got, rec.failed, rec.skipped, rec.msg, inTools)
		}
	})
	t.Run("env overrides", func(t *testing.T) {
		t.Setenv(EnvONNXRuntimeLib, other)
		if rec, got := callONNXRuntimeLib(t); rec.failed || rec.skipped || got != other {
			t.Fatalf("got %q (failed=%v skipped=%v %s), want %s", got, rec.failed, rec.skipped, rec.msg, other)
		}
	})
	t.Run("not ELF skips", func(t *testing.T) {
		t.Setenv(EnvRequireTools, "")
		t.Setenv(EnvONNXRuntimeLib, notELF)
		rec, _ := callONNXRuntimeLib(t)
		if !rec.skipped || rec.failed {
			t.Fatalf("a non-ELF file must skip, got failed=%v skipped=%v", rec.failed, rec.skipped)
		}
		if !strings.Contains(rec.msg, EnvONNXRuntimeLib) || !strings.Contains(rec.msg, "not an ELF") {
			t.Fatalf("skip message does not say which file is wrong: %q", rec.msg)
		}
	})
	t.Run("missing fails when required", func(t *testing.T) {
		t.Setenv(EnvRequireTools, "1")
		t.Setenv(EnvONNXRuntimeLib, filepath.Join(t.TempDir(), "absent.so"))
		rec, _ := callONNXRuntimeLib(t)
		if !rec.failed || rec.skipped {
			t.Fatalf("with %s=1 a missing library must fail, got failed=%v skipped=%v", EnvRequireTools, rec.failed, rec.skipped)
		}
		if !strings.Contains(rec.msg, "setup-tools.sh") {
			t.Fatalf("failure message lacks the setup hint: %q", rec.msg)
		}
	})
}
