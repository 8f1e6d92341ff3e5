package testtools

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// EnvONNXRuntimeLib names the variable that points the onnx embedder's tests at an ONNX
// Runtime shared library other than the one scripts/setup-tools.sh installs.
const EnvONNXRuntimeLib = "HELIX_ONNXRUNTIME_LIB"

// onnxRuntimeLibRel is where scripts/setup-tools.sh puts libonnxruntime.so.1 in the tools dir.
const onnxRuntimeLibRel = "onnxruntime/libonnxruntime.so.1"

// ONNXRuntimeLib returns the path of the ONNX Runtime shared library: $HELIX_ONNXRUNTIME_LIB
// when set, else <tools>/onnxruntime/libonnxruntime.so.1. A file that is missing or is not an
// ELF shared object (say, a truncated download) behaves as Missing: the test is skipped, or
// fails under HELIX_REQUIRE_TOOLS=1.
func ONNXRuntimeLib(t testing.TB) string {
	t.Helper()
	path := os.Getenv(EnvONNXRuntimeLib)
	source := EnvONNXRuntimeLib
	if path == "" {
		path = filepath.Join(Dir(), filepath.FromSlash(onnxRuntimeLibRel))
		source = "the tools dir"
	}
	if err := checkELF(path); err != nil {
		Missing(t, "no ONNX Runtime library from %s: %v", source, err)
		return ""
	}
	return path
}

// checkELF reports whether path is a readable regular file starting with the ELF magic.
func checkELF(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil {
		return fmt.Errorf("%s: read ELF header: %w", path, err)
	}
	if !bytes.Equal(magic, []byte("\x7fELF")) {
		return fmt.Errorf("%s is not an ELF shared library", path)
	}
	return nil
}
