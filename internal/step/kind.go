package step

import (
	"sort"
	"strings"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
)

// Kind declares one step kind once: its name, what it does, the shape of its YAML
// value (keys with types, required, defaults, enums and descriptions, nested step
// lists) and the function that builds it from the decoded values. The shape drives
// decoding — unknown keys (with did-you-mean), wrong types, missing keys and values
// outside an enum are errors with positions before Build runs — and the JSON Schema
// of the YAML file (`helix schema`) and docs/steps.md. A new kind is one file:
//
//	func init() {
//		Define(Kind{
//			Name:        "delay",
//			Description: "Waits before the next step.",
//			Shape: config.Shape{Type: config.TypeObject, Short: "for", Keys: []config.Key{
//				{Name: "for", Required: true, Shape: config.Shape{Type: config.TypeDuration,
//					Description: "How long to wait."}},
//			}},
//			Build: func(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
//				return newDelay(Name(s), v.Duration("for")), d.Err()
//			},
//		})
//	}
//
// A module's step kinds (the RAG module's rag-retrieve …) are defined the same way
// from the module's own package (internal/rag/ragstep), which internal/step/allsteps
// imports, so that this package depends on no module.
type Kind struct {
	Name        string
	Description string
	Shape       config.Shape
	// Build makes the processor. d holds the decoding errors so far; Build records
	// its own checks there (or in bc) and returns d.Err() when it cannot build.
	Build func(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error)
}

var specs = map[string]*Kind{} // guarded by registryMu

// Define registers a step kind from its declaration. It is called from init() of
// the file that implements the kind; defining a kind twice panics, like Register.
func Define(k Kind) {
	kind := &k
	what := kind.Shape.What
	if what == "" {
		what = article(kind.Name) + " " + kind.Name + " step"
	}
	Register(kind.Name, func(bc *BuildContext, s config.StepConfig) (engine.Processor, error) {
		d := bc.Decoder(s)
		v := d.Decode(s.Node, s.Path, what, &kind.Shape)
		p, err := kind.Build(bc, s, d, v)
		bc.warnings = append(bc.warnings, d.Warnings()...) // former key spellings …
		return p, err
	})
	registryMu.Lock()
	defer registryMu.Unlock()
	specs[kind.Name] = kind
}

// Spec is what a step kind declares, for documentation and the JSON Schema.
type Spec struct {
	Name        string
	Description string
	// Shape is nil for kinds registered with [Register] alone, which declare nothing
	// (their value is not checked by the schema).
	Shape *config.Shape
}

// Specs lists every registered step kind, sorted by name.
func Specs() []Spec {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]Spec, 0, len(registry))
	for name := range registry {
		sp := Spec{Name: name}
		if k, ok := specs[name]; ok {
			sp.Description, sp.Shape = k.Description, &k.Shape
		}
		out = append(out, sp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
