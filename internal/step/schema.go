package step

import (
	"sort"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/component"
)

// URISchemes lists the schemes an endpoint URI of a Helix file may name: those of
// every component module of this build (aliases included) and of those left out by
// a build tag, which validate with "not available in this build".
func URISchemes() []string {
	out := component.AbsentSchemes()
	for _, m := range component.Modules() {
		out = append(out, m.Spec.Schemes()...)
	}
	sort.Strings(out)
	return out
}

// JSONSchema returns the JSON Schema (draft 2020-12) of a Helix YAML file: the
// settings as internal/config decodes them and every registered step kind as it is
// declared (see [Define]). `helix schema` prints it; docs/helix.schema.json is a
// checked-in copy. Safe for concurrent use.
func JSONSchema() ([]byte, error) {
	specs := Specs()
	steps := make([]config.StepSchema, len(specs))
	for i, s := range specs {
		steps[i] = config.StepSchema{Name: s.Name, Description: s.Description, Shape: s.Shape}
	}
	return config.FileSchema(config.SchemaOptions{Steps: steps, Schemes: URISchemes(), SchemeOptions: uriOptions()})
}

// uriOptions maps each scheme whose component declares all its options (not
// http://, which forwards unknown parameters) to the option names.
func uriOptions() map[string][]string {
	out := map[string][]string{}
	for _, m := range component.Modules() {
		sp := m.Spec
		if sp.OpenOptions != "" {
			continue
		}
		for _, sc := range append([]string{sp.Scheme}, sp.Aliases...) {
			out[sc] = sp.OptionNames()
		}
	}
	return out
}
