//go:build helix_noonnx

package rerank

func init() { providers.LeftOut("onnx", "helix_noonnx") }
