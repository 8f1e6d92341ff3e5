//go:build !cgo

package onnx

import "errors"

// ONNX Runtime is called through cgo: a binary built with CGO_ENABLED=0 has no
// way to load it.
func openSession(libraryPath, modelPath string) (session, error) {
	return nil, errors.New("onnx: onnx embeddings need a cgo build of helix (this one was built with CGO_ENABLED=0)")
}
