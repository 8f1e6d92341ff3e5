package component

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/arvenza/helix/internal/suggest"
	"github.com/arvenza/helix/pkg/uri"
)

// Binding reads a URI's options, as its Spec declares them, into the fields of the
// struct T. Components declare one Binding next to their Spec and read options
// only through T's fields, so a misspelt option is a compile error rather than a
// silent zero:
//
//	type timerOptions struct {
//		Period      time.Duration `option:"period"`
//		RepeatCount int64         `option:"repeatCount"`
//	}
//
//	var uriBinding = component.Bind[timerOptions](Spec)
//
//	opts, err := uriBinding.Parse(u) // in CreateEndpoint
//
// A field's tag names the option it holds; the field's type must fit the option's:
//
//	string (or a string type)   TypeString, TypeEnum (the canonical spelling)
//	[]string                    a Multiple option, every value in URI order
//	bool                        TypeBool
//	int64, int …                TypeInt (a value too large for the field is an error)
//	time.Duration               TypeDuration
//
// Modifiers after a comma bind more than the value:
//
//	option:"topic,given"          bool: whether the URI gave the option (a default
//	                              does not count)
//	option:"name,nodefault"       the value only when the URI gave it, else the zero
//	                              value: for options whose defaults are applied later,
//	                              the same way for URIs and YAML (the spec's default
//	                              documents them)
//	option:"fileName,placeholder" bool: whether the value came (partly) from a
//	                              per-exchange placeholder of the URI's template
//	                              (${body.name}): from an exchange's data rather than
//	                              from the workflow's author
//	option:",extra"               url.Values: the query parameters an open spec
//	                              (OpenOptions) passes on
//	option:"name,elsewhere"       on a blank field (_ struct{}): the option is declared
//	                              but read by other code, not through this struct
//
// An embedded struct without a tag contributes its fields, so options several
// specs share (a listener's limits) are bound by one struct they all embed.
// Every field binds an option, every declared option is bound by a field (or
// marked elsewhere), and an open spec has an extra field. [Binding.Check] reports
// every mismatch; Parse returns the same error, and a test runs Check for every
// registered component, so a mismatch never reaches a user.
type Binding[T any] struct {
	spec *Spec

	once   sync.Once
	fields []boundField
	err    error
}

// BoundOptions is what every Binding offers whatever its struct: its spec and its
// consistency check. [Bindings] lists them for tests.
type BoundOptions interface {
	Spec() *Spec
	Check() error
}

// fieldRole says what a struct field receives.
type fieldRole int

const (
	roleValue     fieldRole = iota // the option's value
	roleGiven                      // whether the URI gave the option
	roleFromData                   // whether the value came from a per-exchange placeholder
	roleExtra                      // the parameters that are not options
	roleElsewhere                  // nothing: the option is read by other code
)

// boundField is one checked field of the struct.
type boundField struct {
	index     []int // reflect.Value.FieldByIndex, through embedded structs
	role      fieldRole
	noDefault bool // the value only when the URI gave it
	option    Option
}

var (
	bindingsMu sync.Mutex
	bindings   []BoundOptions
)

// Bind declares that the struct T holds the options of spec. Call it once per
// component, at package level; the struct is checked when the binding is first
// used (or by [Binding.Check]), never at initialisation, so a mismatch is an error,
// not a panic.
func Bind[T any](spec *Spec) *Binding[T] {
	b := &Binding[T]{spec: spec}
	bindingsMu.Lock()
	bindings = append(bindings, b)
	bindingsMu.Unlock()
	return b
}

// Bindings lists every Binding made so far, in the order Bind was called.
func Bindings() []BoundOptions {
	bindingsMu.Lock()
	defer bindingsMu.Unlock()
	return append([]BoundOptions(nil), bindings...)
}

// Spec returns the spec whose options the binding reads.
func (b *Binding[T]) Spec() *Spec { return b.spec }

// Check reports every mismatch between T and the spec's options, nil when they fit.
func (b *Binding[T]) Check() error {
	b.once.Do(b.plan)
	return b.err
}

// Parse checks u's options as [Spec.Parse] does (same errors, defaults, secrets)
// and returns them in a T.
func (b *Binding[T]) Parse(u *uri.URI) (T, error) {
	var out T
	if err := b.Check(); err != nil {
		return out, err
	}
	opts, err := b.spec.Parse(u)
	if err != nil {
		return out, err
	}
	v := reflect.ValueOf(&out).Elem()
	var problems []error
	for _, f := range b.fields {
		if err := f.fill(v.FieldByIndex(f.index), opts, u); err != nil {
			err.Scheme = b.spec.Scheme
			problems = append(problems, err)
		}
	}
	switch len(problems) {
	case 0:
		return out, nil
	case 1:
		return out, problems[0]
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Error()
	}
	return out, fmt.Errorf("%s", strings.Join(msgs, "; ")) // joined as Spec.Parse joins its problems
}

// fill sets one field from the parsed options.
func (f boundField) fill(field reflect.Value, opts *Options, u *uri.URI) *OptionError {
	switch f.role {
	case roleGiven:
		field.SetBool(opts.set[f.option.Name])
	case roleFromData:
		field.SetBool(u.FromPlaceholder(f.option.Name))
	case roleExtra:
		field.Set(reflect.ValueOf(opts.extraValues()))
	case roleValue:
		if f.noDefault && !opts.set[f.option.Name] {
			return nil
		}
		return setValue(field, f.option, opts.values[f.option.Name])
	}
	return nil
}

// setValue stores one parsed value (nil when unset without a default) in field,
// whose type plan has checked.
func setValue(field reflect.Value, opt Option, value any) *OptionError {
	if s, ok := value.(string); ok && opt.Multiple {
		value = []string{s} // a Multiple option's default is one value
	}
	switch v := value.(type) {
	case nil:
	case []string:
		field.Set(reflect.ValueOf(append([]string(nil), v...)))
	case string:
		field.SetString(v)
	case bool:
		field.SetBool(v)
	case time.Duration:
		field.SetInt(int64(v))
	case int64:
		if field.OverflowInt(v) {
			msg := fmt.Sprintf("option %s=%q is too large", opt.Name, fmt.Sprint(v))
			if opt.Secret {
				msg = "option " + opt.Name + " is too large (the value is secret and not shown)"
			}
			return &OptionError{Option: opt.Name, Msg: msg, Hint: fmt.Sprintf("use a number that fits in %d bits", field.Type().Bits())}
		}
		field.SetInt(v)
	}
	return nil
}

// plan checks T against the spec once and records which field receives what.
func (b *Binding[T]) plan() {
	typ := reflect.TypeFor[T]()
	var errs []string
	defer func() {
		if len(errs) > 0 {
			b.err = fmt.Errorf("internal error: options of %s:// bound to %s: %s", b.spec.Scheme, typ, strings.Join(errs, "; "))
			b.fields = nil
		}
	}()
	if typ.Kind() != reflect.Struct {
		errs = append(errs, typ.String()+" is not a struct")
		return
	}
	covered := map[string]bool{}
	valueBound := map[string]bool{}
	hasExtra := false
	for _, sf := range optionFields(typ, nil) {
		f, err := b.spec.planField(sf)
		if f.option.Name != "" {
			covered[f.option.Name] = true
		}
		if err == nil && f.role == roleValue {
			if valueBound[f.option.Name] {
				err = fmt.Errorf("option %s is bound twice", f.option.Name)
			}
			valueBound[f.option.Name] = true
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("field %s: %v", sf.Name, err))
			continue
		}
		hasExtra = hasExtra || f.role == roleExtra
		if f.role != roleElsewhere {
			b.fields = append(b.fields, f)
		}
	}
	for _, o := range b.spec.Options {
		if !covered[o.Name] {
			errs = append(errs, fmt.Sprintf("option %s is declared but no field binds it (add a field tagged option:%q, or a blank field tagged option:%q when other code reads it)", o.Name, o.Name, o.Name+",elsewhere"))
		}
	}
	if b.spec.OpenOptions != "" && !hasExtra {
		errs = append(errs, b.spec.Scheme+`:// sends unknown parameters on: bind them to a url.Values field tagged option:",extra"`)
	}
}

// optionFields lists typ's fields, those of embedded structs without an option tag
// in their place, each with its index path from the top.
func optionFields(typ reflect.Type, at []int) []reflect.StructField {
	var out []reflect.StructField
	for i := range typ.NumField() {
		sf := typ.Field(i)
		sf.Index = append(slices.Clone(at), i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && sf.Tag.Get("option") == "" {
			out = append(out, optionFields(sf.Type, sf.Index)...)
			continue
		}
		out = append(out, sf)
	}
	return out
}

// planField checks one struct field. The returned boundField names its option
// whenever the tag names a declared one, even when the field is wrong, so the
// option is not reported a second time as unbound.
func (s *Spec) planField(sf reflect.StructField) (boundField, error) {
	tag, ok := sf.Tag.Lookup("option")
	if !ok {
		return boundField{}, fmt.Errorf("no option tag (every field of an options struct binds an option)")
	}
	name, modifier, _ := strings.Cut(tag, ",")
	f := boundField{index: sf.Index}
	if modifier == "extra" {
		switch {
		case name != "":
			return f, fmt.Errorf(`an ",extra" field names no option: write option:",extra"`)
		case s.OpenOptions == "":
			return f, fmt.Errorf("%s:// has no open options: its unknown parameters are errors, there is nothing to bind", s.Scheme)
		case sf.Type != reflect.TypeFor[url.Values]():
			return f, fmt.Errorf(`an ",extra" field must be a url.Values, not %s`, sf.Type)
		case !sf.IsExported():
			return f, fmt.Errorf("unexported: options are set through exported fields")
		}
		f.role = roleExtra
		return f, nil
	}
	opt, declared := s.Option(name)
	if !declared {
		msg := fmt.Sprintf("option %q is not declared", name)
		if near := suggest.Closest(name, s.OptionNames()); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
		return f, fmt.Errorf("%s", msg)
	}
	f.option = opt
	switch modifier {
	case "elsewhere":
		f.role = roleElsewhere
		return f, nil
	case "given", "placeholder":
		f.role = roleGiven
		if modifier == "placeholder" {
			f.role = roleFromData
		}
		if sf.Type.Kind() != reflect.Bool {
			return f, fmt.Errorf(`a ",%s" field must be a bool, not %s`, modifier, sf.Type)
		}
	case "", "nodefault":
		f.role, f.noDefault = roleValue, modifier == "nodefault"
		if err := opt.fits(sf.Type); err != nil {
			return f, err
		}
	default:
		return f, fmt.Errorf("unknown tag modifier %q (use given, nodefault, placeholder, extra or elsewhere)", modifier)
	}
	if !sf.IsExported() {
		return f, fmt.Errorf("unexported: options are set through exported fields")
	}
	return f, nil
}

// fits reports whether a field of type t can hold the option's value.
func (o Option) fits(t reflect.Type) error {
	durationType := reflect.TypeFor[time.Duration]()
	var want string
	ok := false
	switch {
	case o.Multiple:
		want = "[]string"
		ok = t == reflect.TypeFor[[]string]()
		if !ok {
			return fmt.Errorf("option %s may be given more than once: use %s, not %s", o.Name, want, t)
		}
		return nil
	case o.Type == TypeString || o.Type == TypeEnum:
		want, ok = "string", t.Kind() == reflect.String
	case o.Type == TypeBool:
		want, ok = "bool", t.Kind() == reflect.Bool
	case o.Type == TypeDuration:
		want, ok = "time.Duration", t == durationType
	case o.Type == TypeInt:
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			ok = t != durationType
		}
		want = "int64 (or another signed integer type)"
	}
	if !ok {
		return fmt.Errorf("option %s is %s: use %s, not %s", o.Name, article(o.Type), want, t)
	}
	return nil
}

// article renders an option type for messages: "a duration", "an int".
func article(t OptionType) string {
	switch t {
	case TypeInt, TypeEnum:
		return "an " + string(t)
	}
	return "a " + string(t)
}
