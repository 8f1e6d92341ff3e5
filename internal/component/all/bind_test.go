package all

import (
	"testing"

	"github.com/arvenza/helix/pkg/component"
)

// TestEveryComponentBindsItsOptions: every registered component with options reads
// them through exactly one component.Binding whose struct fits the spec (every
// field names a declared option of a fitting type, every option is bound), so no
// component reads an option by a name the compiler cannot check.
func TestEveryComponentBindsItsOptions(t *testing.T) {
	t.Parallel()
	bound := map[*component.Spec][]component.BoundOptions{}
	for _, b := range component.Bindings() {
		bound[b.Spec()] = append(bound[b.Spec()], b)
	}
	for _, s := range Specs() {
		bs := bound[s]
		switch {
		case len(s.Options) == 0 && len(bs) == 0:
			continue
		case len(bs) == 0:
			t.Errorf("%s:// declares options but binds them to no struct (declare var … = component.Bind[yourOptions](Spec))", s.Scheme)
			continue
		case len(bs) > 1:
			t.Errorf("%s:// has %d bindings; read its options through one struct", s.Scheme, len(bs))
		}
		for _, b := range bs {
			if err := b.Check(); err != nil {
				t.Error(err)
			}
		}
	}
}
