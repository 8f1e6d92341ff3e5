// Package registry maps the names a configuration writes (a model provider, an
// embedder, a rate-limit store's URL scheme) to the code that implements them, so
// that the code choosing by name does not import the implementations. Each
// implementation is linked in by a registration file guarded by a build tag
// (helix_nollm, helix_noredis, helix_noonnx); the file for the opposite tag records
// the name as left out, so that a configuration using it is told which build
// leaves it out instead of "unknown provider".
//
// Registration happens in init functions, lookups afterwards: a Registry is not
// locked.
package registry

import (
	"fmt"
	"slices"
)

// Registry is the implementations of one kind (F is their constructor), by name.
type Registry[F any] struct {
	entries map[string]F
	leftOut map[string]string // name → the build tag that left it out
}

// New returns an empty registry.
func New[F any]() *Registry[F] {
	return &Registry[F]{entries: map[string]F{}, leftOut: map[string]string{}}
}

// Register makes name available. Registering a name twice is a programming
// error and panics at start-up (init), never on user input.
func (r *Registry[F]) Register(name string, f F) {
	if _, dup := r.entries[name]; dup {
		panic(fmt.Sprintf("registry: %q registered twice", name))
	}
	r.entries[name] = f
}

// LeftOut records that this build leaves name out because it was built with tag.
func (r *Registry[F]) LeftOut(name, tag string) {
	r.leftOut[name] = tag
}

// Lookup returns name's implementation. A name left out of this build is a
// *NotInBuildError; a name nobody registered reports ok false and a nil error, so
// that the caller says "unknown" in its own words (with its own suggestions).
func (r *Registry[F]) Lookup(name string) (f F, ok bool, err error) {
	if f, ok := r.entries[name]; ok {
		return f, true, nil
	}
	if tag, ok := r.leftOut[name]; ok {
		return f, false, &NotInBuildError{Name: name, Tag: tag}
	}
	return f, false, nil
}

// Available reports whether name is usable in this build: nil when it is
// registered, a *NotInBuildError when the build left it out, and nil for a name
// the registry does not know (the configuration's own checks report those).
func (r *Registry[F]) Available(name string) error {
	_, _, err := r.Lookup(name)
	return err
}

// Names are the registered names, sorted.
func (r *Registry[F]) Names() []string {
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// NotInBuildError is a configuration asking for something this binary was built
// without.
type NotInBuildError struct {
	Name string // what the configuration wrote: openai, onnx, redis
	Tag  string // the build tag that left it out: helix_nollm
}

func (e *NotInBuildError) Error() string {
	return fmt.Sprintf("%s is not available in this build (built with -tags %s); use a build without it", e.Name, e.Tag)
}
