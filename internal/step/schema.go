package step

import (
	"sort"

	"github.com/arvenza/helix/internal/component/all"
	"github.com/arvenza/helix/internal/config"
)

// URISchemes lists the schemes an endpoint URI of a Helix file may name: every
// registered component (aliases included) and the planned ones the documentation
// uses (kafka, postgres …), which validate with "not available in this build".
func URISchemes() []string {
	set := map[string]bool{}
	for _, s := range all.Schemes() {
		set[s.Scheme] = true
	}
	for _, s := range all.PlannedSchemes() {
		set[s] = true
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
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
	for _, sp := range all.Specs() {
		if sp.OpenOptions != "" {
			continue
		}
		for _, sc := range append([]string{sp.Scheme}, sp.Aliases...) {
			out[sc] = sp.OptionNames()
		}
	}
	return out
}
