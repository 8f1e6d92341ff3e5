//go:build !cgo

package onnx

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag/embed/onnx/onnxtest"
)

func TestNoCgoBuild(t *testing.T) {
	dir := t.TempDir()
	model := onnxtest.WriteModel(t, dir, onnxtest.ModelOptions{})
	onnxtest.WriteTokenizer(t, dir, nil)
	_, err := New(Config{ModelPath: model})
	if err == nil || !strings.Contains(err.Error(), "onnx embeddings need a cgo build") {
		t.Errorf("err = %v", err)
	}
}
