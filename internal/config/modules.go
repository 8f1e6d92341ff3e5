package config

import (
	"fmt"
	"sort"
	"sync"

	"go.yaml.in/yaml/v3"
)

// ModuleSettings declares the block helix.<Name> of a component module (helix.kafka
// is the Kafka module's). The module declares it from its init function with
// [DeclareModuleSettings]; this package only hands the block to Decode. The keys,
// their descriptions ([Decoder.Doc]) and so the JSON Schema of the block come from
// Decode, which runs in describe mode like every other decoder of the file.
type ModuleSettings struct {
	// Name is the key under helix:, the module's scheme.
	Name string
	// Doc describes the block in the JSON Schema.
	Doc string
	// Decode reads the block at path, reporting mistakes through d at their
	// positions, and returns the value the module's New gets as Env.Settings.
	Decode func(d *Decoder, n *yaml.Node, path string) any
}

var moduleSettings struct {
	sync.RWMutex
	byName map[string]ModuleSettings
	absent map[string]string // helix.<name> of modules left out of this build → why
}

// DeclareAbsentModuleSettings says that helix.<name> belongs to a module left out of
// this build, for why (for example "built with -tags helix_nokafka"): the key is then
// refused with that reason instead of as unknown. The build-tagged file that leaves
// the module out calls it, next to component.RegisterAbsent, so this package needs
// no knowledge of components.
func DeclareAbsentModuleSettings(name, why string) {
	moduleSettings.Lock()
	defer moduleSettings.Unlock()
	if moduleSettings.absent == nil {
		moduleSettings.absent = map[string]string{}
	}
	moduleSettings.absent[name] = why
}

// DeclareModuleSettings adds helix.<s.Name> to the keys of helix:. Declaring a
// name twice, or one helix: already has, is a programming mistake and panics.
func DeclareModuleSettings(s ModuleSettings) {
	if s.Name == "" || s.Decode == nil {
		panic("config.DeclareModuleSettings: a name and a decoder are required")
	}
	moduleSettings.Lock()
	defer moduleSettings.Unlock()
	if _, dup := moduleSettings.byName[s.Name]; dup {
		panic(fmt.Sprintf("config.DeclareModuleSettings: helix.%s declared twice", s.Name))
	}
	if moduleSettings.byName == nil {
		moduleSettings.byName = map[string]ModuleSettings{}
	}
	moduleSettings.byName[s.Name] = s
}

// addModuleFields adds to fields, the keys of helix:, one key per module settings
// block (decoded into h.Modules) and one per module left out of this build (an
// error saying so, rather than "unknown key").
func addModuleFields(d *Decoder, h *HelixConfig, fields Fields) {
	moduleSettings.RLock()
	declared := make([]ModuleSettings, 0, len(moduleSettings.byName))
	for _, s := range moduleSettings.byName {
		declared = append(declared, s)
	}
	moduleSettings.RUnlock()
	sort.Slice(declared, func(i, j int) bool { return declared[i].Name < declared[j].Name })
	for _, s := range declared {
		if _, taken := fields[s.Name]; taken {
			panic(fmt.Sprintf("config: module settings helix.%s clash with a key of helix:", s.Name))
		}
		fields[s.Name] = func(v *yaml.Node, p string) {
			d.Doc(v, s.Doc)
			value := s.Decode(d, v, p)
			if h.Modules == nil {
				h.Modules = map[string]any{}
			}
			h.Modules[s.Name] = value
		}
	}
	if d.desc != nil {
		return // the JSON Schema lists what this build has
	}
	moduleSettings.RLock()
	absent := make([]string, 0, len(moduleSettings.absent))
	for name := range moduleSettings.absent {
		absent = append(absent, name)
	}
	moduleSettings.RUnlock()
	sort.Strings(absent)
	for _, scheme := range absent {
		if _, taken := fields[scheme]; taken {
			continue
		}
		moduleSettings.RLock()
		why := moduleSettings.absent[scheme]
		moduleSettings.RUnlock()
		fields[scheme] = func(v *yaml.Node, p string) {
			d.Errorf(v, p, "%s:// is not available in this build (%s)", scheme, why).Hint =
				fmt.Sprintf("remove helix.%s, or use a build that includes %s://", scheme, scheme)
		}
	}
}

// Describing reports whether d runs in describe mode (building the JSON Schema on
// probe nodes): a decoder that reads a value in two ways (one string or a list)
// then describes both shapes instead of decoding.
func (d *Decoder) Describing() bool { return d.desc != nil }
