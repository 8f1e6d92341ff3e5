//go:build helix_nollm

package pipeline

func init() { embedders.LeftOut("openai", "helix_nollm") }
