//go:build helix_noonnx

package pipeline

func init() { embedders.LeftOut("onnx", "helix_noonnx") }
