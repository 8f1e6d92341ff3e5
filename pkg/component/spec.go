package component

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/arvenza/helix/internal/suggest"
	"github.com/arvenza/helix/pkg/uri"
)

// Spec describes one component the way a user writing its URI needs it: what the
// address means, every option, the headers it reads and writes, and whether it can
// be a trigger, a target or both. Each component declares its Spec once, in the
// spec.go of its folder; that one value drives URI parsing ([Spec.Parse]: unknown
// options, wrong types and missing required options are errors with a did-you-mean),
// `helix components`, the generated pages under docs/components/ and the scheme
// lists of configuration validation.
//
// A Spec is plain data, built at package initialisation and never changed; it is
// safe for concurrent use.
type Spec struct {
	// Scheme is the URI scheme, lower case, without "://".
	Scheme string `json:"scheme"`
	// Aliases are further schemes the same component serves (https for http).
	Aliases []string `json:"aliases,omitempty"`
	// Summary is one line: what the component is for.
	Summary string `json:"summary"`
	// Description is the longer story, Markdown paragraphs separated by blank lines.
	Description string `json:"description,omitempty"`
	// Direction says whether the component produces (a target), consumes (a
	// trigger) or both.
	Direction Direction `json:"direction"`
	// Syntax shows the URI's shape: timer://name[?options].
	Syntax string `json:"syntax"`
	// Path explains the parts of the address between "://" and "?".
	Path []PathPart `json:"path,omitempty"`
	// Options lists every query option the component reads.
	Options []Option `json:"options"`
	// OpenOptions, when not empty, says what happens to query parameters that are
	// not options (http:// sends them to the server); they are then not errors.
	OpenOptions string `json:"openOptions,omitempty"`
	// Headers are the exchange headers the component reads and writes.
	Headers []Header `json:"headers,omitempty"`
	// Examples are URIs as a user writes them, each with a sentence.
	Examples []Example `json:"examples,omitempty"`
	// Since is the Helix version that introduced the component.
	Since string `json:"since,omitempty"`
	// Singleton marks triggers that must run on one replica at a time: schedulers
	// and pollers, which every replica would otherwise fire or poll in parallel
	// (timer://, file:// and postgres:// triggers). With helix.cluster.leader set,
	// the engine starts them only on the elected leader; other triggers run on
	// every replica.
	Singleton bool `json:"singleton,omitempty"`
	// FreshExchanges marks triggers whose exchanges come from outside Helix and so
	// start with no variables (http-server://, timer://, kafka:// …). A workflow
	// with any other trigger (direct://, tool://) may be handed an exchange that
	// another workflow's enrich steps filled, so its scripts' names are checked
	// against every enrich step of the configuration rather than its own.
	FreshExchanges bool `json:"freshExchanges,omitempty"`
	// Trace, when set, gives the span kind and attributes of the exchanges this
	// trigger starts (an HTTP server span with the method and path, a Kafka
	// consumer span with the topic); without it their spans are internal.
	Trace TraceHook `json:"-"`
}

// PathPart is one part of the address (the name of direct://name, the host:port
// and path of http-server://host:port/path).
type PathPart struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Required    bool   `json:"required,omitempty"`
}

// OptionType is the type of an option's value as written in a URI.
type OptionType string

// Option types. [Spec.Parse] checks every value against its type.
const (
	// TypeString is any text.
	TypeString OptionType = "string"
	// TypeBool is true or false (also 1/0, yes/no).
	TypeBool OptionType = "bool"
	// TypeInt is a whole number.
	TypeInt OptionType = "int"
	// TypeDuration is a Go duration (30s, 500ms, 1m30s) or a bare number of milliseconds.
	TypeDuration OptionType = "duration"
	// TypeEnum is one of Option.Enum, compared without regard to case.
	TypeEnum OptionType = "enum"
)

// Option is one URI query option.
type Option struct {
	// Name as written in the URI: camelCase (repeatCount, fileName).
	Name string     `json:"name"`
	Type OptionType `json:"type"`
	// Default is the value used when the option is absent, as it would be written
	// in the URI; "" means no default (the option is unset).
	Default string `json:"default,omitempty"`
	// Enum lists the allowed values of a TypeEnum option, canonical spelling.
	Enum []string `json:"enum,omitempty"`
	// EnumAliases maps further accepted spellings to Enum values (warning → warn).
	EnumAliases map[string]string `json:"enumAliases,omitempty"`
	// Required options must be given.
	Required bool `json:"required,omitempty"`
	// Secret options hold credentials: their values are never printed (errors say
	// "the value is secret"); write them as ${env:NAME}.
	Secret bool `json:"secret,omitempty"`
	// Multiple options may be given more than once (args=a&args=b); others may not.
	Multiple bool `json:"multiple,omitempty"`
	// Role says whether the option matters to the producer, the consumer or both.
	Role Direction `json:"role"`
	// Description says what the option does, in Markdown; one or two sentences.
	Description string `json:"description"`
	// Since is the Helix version that introduced the option.
	Since string `json:"since,omitempty"`
}

// HeaderUse says whether a component reads a header, writes it, or both.
type HeaderUse int

// Header uses.
const (
	Reads HeaderUse = 1 << iota
	Writes
	ReadsWrites = Reads | Writes
)

// String renders "reads", "writes" or "reads, writes".
func (h HeaderUse) String() string {
	switch h {
	case Reads:
		return "reads"
	case Writes:
		return "writes"
	case ReadsWrites:
		return "reads, writes"
	}
	return "-"
}

// Header is an exchange header a component reads or writes. The constant holding
// its name lives in the component's package.
type Header struct {
	Name string `json:"name"`
	// Type of the value (string, int, bool …).
	Type string    `json:"type"`
	Use  HeaderUse `json:"use"`
	// Role says whether the producer, the consumer or both use the header.
	Role        Direction `json:"role"`
	Description string    `json:"description"`
}

// Example is a URI with one sentence saying what it does.
type Example struct {
	URI         string `json:"uri"`
	Description string `json:"description"`
}

// String renders a Direction for people: "producer and consumer", "producer" or
// "consumer".
func (d Direction) String() string {
	switch d {
	case ProducerOnly:
		return "producer"
	case ConsumerOnly:
		return "consumer"
	}
	return "producer and consumer"
}

// MarshalText renders a Direction for JSON: "both", "producer" or "consumer".
func (d Direction) MarshalText() ([]byte, error) {
	switch d {
	case ProducerOnly:
		return []byte("producer"), nil
	case ConsumerOnly:
		return []byte("consumer"), nil
	}
	return []byte("both"), nil
}

// MarshalText renders a HeaderUse for JSON: "reads", "writes" or "reads, writes".
func (h HeaderUse) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// Described is implemented by components that carry their Spec; the engine and
// the CLI use it to name options and hide secret values.
type Described interface {
	Spec() *Spec
}

// Option returns the option called name.
func (s *Spec) Option(name string) (Option, bool) {
	for _, o := range s.Options {
		if o.Name == name {
			return o, true
		}
	}
	return Option{}, false
}

// OptionNames lists the options' names in declaration order.
func (s *Spec) OptionNames() []string {
	out := make([]string, len(s.Options))
	for i, o := range s.Options {
		out[i] = o.Name
	}
	return out
}

// Schemes returns Scheme followed by the Aliases.
func (s *Spec) Schemes() []string { return append([]string{s.Scheme}, s.Aliases...) }

// Check reports mistakes in the Spec itself (a default that does not parse as its
// type, an enum without values, a name used twice); the registry's test runs it for
// every component.
func (s *Spec) Check() error {
	var errs []string
	if s.Scheme == "" || s.Summary == "" || s.Syntax == "" {
		errs = append(errs, "scheme, summary and syntax are required")
	}
	seen := map[string]bool{}
	for _, o := range s.Options {
		if o.Name == "" || seen[o.Name] {
			errs = append(errs, fmt.Sprintf("option %q: empty or duplicate name", o.Name))
		}
		seen[o.Name] = true
		if o.Description == "" {
			errs = append(errs, fmt.Sprintf("option %s: no description", o.Name))
		}
		switch o.Type {
		case TypeString, TypeBool, TypeInt, TypeDuration:
		case TypeEnum:
			if len(o.Enum) == 0 {
				errs = append(errs, fmt.Sprintf("option %s: enum without values", o.Name))
			}
		default:
			errs = append(errs, fmt.Sprintf("option %s: unknown type %q", o.Name, o.Type))
		}
		if o.Default != "" {
			if _, err := o.convert(o.Default); err != nil {
				errs = append(errs, fmt.Sprintf("option %s: default %q: %v", o.Name, o.Default, err))
			}
		}
	}
	for _, h := range s.Headers {
		if h.Name == "" || h.Use == 0 || h.Description == "" {
			errs = append(errs, fmt.Sprintf("header %q: name, use and description are required", h.Name))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("spec %s: %s", s.Scheme, strings.Join(errs, "; "))
	}
	return nil
}

// OptionError is a URI option [Spec.Parse] refused.
type OptionError struct {
	Scheme string
	Option string
	// Msg says what is wrong: `unknown option "peroid"`, `option period="x" is not a duration`.
	Msg string
	// Hint says what to do: a did-you-mean, or the values allowed.
	Hint string
}

func (e *OptionError) Error() string {
	if e.Hint != "" {
		return e.Msg + " (" + e.Hint + ")"
	}
	return e.Msg
}

// Parse checks u's query options against the spec and converts them to their types;
// components read the result through a [Binding] ([Binding.Parse] calls Parse).
// Unknown options (unless OpenOptions is set), values of the wrong type, options given
// twice and missing required options are errors; every problem is reported, joined.
// Components call it (through their Binding) first thing in CreateEndpoint, so
// `helix validate` reports the problems at the URI's position; components without
// options call it to refuse any. Secret values never appear in the errors.
func (s *Spec) Parse(u *uri.URI) (*Options, error) {
	return s.parse(u, false)
}

// CheckTemplate checks a URI template whose values may hold per-exchange
// placeholders (file://./data?fileName=${body.name}): option names, repeats and
// required options are checked as [Spec.Parse] does, and every value without a
// placeholder is checked against its type; values with one are checked when an
// exchange resolves them. Configuration validation calls it for targets that are
// not built until they are used.
func (s *Spec) CheckTemplate(u *uri.URI) error {
	_, err := s.parse(u, true)
	return err
}

func (s *Spec) parse(u *uri.URI, template bool) (*Options, error) {
	o := &Options{spec: s, values: map[string]any{}, set: map[string]bool{}}
	var problems []error
	names := make([]string, 0, len(u.Params))
	for name := range u.Params {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		vs := u.Params[name]
		opt, ok := s.Option(name)
		if !ok {
			if s.OpenOptions != "" {
				if o.extra == nil {
					o.extra = url.Values{}
				}
				o.extra[name] = vs
				continue
			}
			problems = append(problems, s.unknown(name))
			continue
		}
		if len(vs) > 1 && !opt.Multiple {
			problems = append(problems, &OptionError{Scheme: s.Scheme, Option: name, Msg: fmt.Sprintf("option %s is given %d times", name, len(vs)), Hint: "give it once"})
			continue
		}
		if len(vs) == 0 {
			continue
		}
		if template && uri.HasPlaceholders(vs[0]) {
			o.set[name] = true
			continue
		}
		v, err := opt.convert(vs[0])
		if err != nil {
			msg := fmt.Sprintf("option %s=%q %v", name, vs[0], err)
			if opt.Secret {
				msg = fmt.Sprintf("option %s %v (the value is secret and not shown)", name, err)
			}
			problems = append(problems, &OptionError{Scheme: s.Scheme, Option: name, Msg: msg, Hint: opt.hint()})
			continue
		}
		o.values[name] = v
		o.set[name] = true
		if opt.Multiple {
			o.values[name] = append([]string(nil), vs...)
		}
	}
	for _, opt := range s.Options {
		if o.set[opt.Name] {
			continue
		}
		if opt.Required {
			problems = append(problems, &OptionError{Scheme: s.Scheme, Option: opt.Name, Msg: "option " + opt.Name + " is required", Hint: opt.Description})
			continue
		}
		if opt.Default != "" {
			v, _ := opt.convert(opt.Default) // Check proves defaults convert
			o.values[opt.Name] = v
		}
	}
	if len(problems) == 1 {
		return nil, problems[0]
	}
	if len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.Error()
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return o, nil
}

func (s *Spec) unknown(name string) *OptionError {
	e := &OptionError{Scheme: s.Scheme, Option: name, Msg: fmt.Sprintf("unknown option %q", name)}
	names := s.OptionNames()
	switch {
	case len(names) == 0:
		e.Hint = s.Scheme + ":// takes no options"
	case suggest.Closest(name, names) != "":
		e.Hint = fmt.Sprintf("did you mean %q?", suggest.Closest(name, names))
	default:
		e.Hint = "options: " + strings.Join(names, ", ") + "; see helix components " + s.Scheme
	}
	return e
}

// hint says what values the option takes, for errors.
func (o Option) hint() string {
	switch o.Type {
	case TypeBool:
		return "use true or false"
	case TypeInt:
		return "use a whole number"
	case TypeDuration:
		return "use a duration such as 30s or 500ms, or a number of milliseconds"
	case TypeEnum:
		return "use " + orList(o.Enum)
	}
	return ""
}

func orList(vs []string) string {
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return vs[0]
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// convert parses one value written in a URI.
func (o Option) convert(v string) (any, error) {
	switch o.Type {
	case TypeBool:
		switch strings.ToLower(v) {
		case "true", "1", "yes":
			return true, nil
		case "false", "0", "no":
			return false, nil
		}
		return nil, fmt.Errorf("is not a boolean")
	case TypeInt:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("is not a whole number")
		}
		return n, nil
	case TypeDuration:
		if d, err := time.ParseDuration(v); err == nil {
			return d, nil
		}
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Duration(ms) * time.Millisecond, nil
		}
		return nil, fmt.Errorf("is not a duration")
	case TypeEnum:
		lv := strings.ToLower(strings.TrimSpace(v))
		if canon, ok := o.EnumAliases[lv]; ok {
			lv = canon
		}
		for _, e := range o.Enum {
			if strings.ToLower(e) == lv {
				return e, nil
			}
		}
		return nil, fmt.Errorf("is not one of the allowed values")
	}
	return v, nil
}

// Options are a URI's options after [Spec.Parse]: typed, defaults applied. They are
// read only through a [Binding], whose struct fields the compiler checks: there is
// deliberately no way to read a value by its name, where a misspelt name would give
// a silent zero. Safe for concurrent reads.
type Options struct {
	spec   *Spec
	values map[string]any  // option name → string, []string, bool, int64 or time.Duration
	set    map[string]bool // the options the URI gave (a default does not count)
	extra  url.Values      // an open spec's parameters that are not options
}

// extraValues returns a copy of the parameters that are not options, nil when there
// are none.
func (o *Options) extraValues() url.Values {
	if o.extra == nil {
		return nil
	}
	out := make(url.Values, len(o.extra))
	for k, vs := range o.extra {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// Redact returns raw with the values of s's secret options (and of misspellings of
// them, such as tokn=) replaced by "***", for messages and listings. A raw that does not parse is returned as it is: it holds no
// option values the spec could name.
func (s *Spec) Redact(raw string) string {
	raw = redactUserInfo(raw)
	q := strings.IndexByte(raw, '?')
	if q < 0 {
		return raw
	}
	parts := strings.Split(raw[q+1:], "&")
	changed := false
	for i, kv := range parts {
		k, _, hasValue := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if s.secretName(k) && hasValue {
			parts[i] = kv[:strings.IndexByte(kv, '=')+1] + "***"
			changed = true
		}
	}
	if !changed {
		return raw
	}
	return raw[:q+1] + strings.Join(parts, "&")
}

// redactUserInfo hides the password of a URI's user info
// (postgres://app:s3cret@db/x → postgres://app:***@db/x).
func redactUserInfo(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	start := i + 3
	end := len(raw)
	if j := strings.IndexAny(raw[start:], "/?"); j >= 0 {
		end = start + j
	}
	at := strings.LastIndexByte(raw[start:end], '@')
	if at < 0 {
		return raw
	}
	colon := strings.IndexByte(raw[start:start+at], ':')
	if colon < 0 {
		return raw
	}
	return raw[:start+colon+1] + "***" + raw[start+at:]
}

// secretName reports whether the value of query parameter k is to be hidden: k is a
// secret option, or a misspelling of one (slack://ops?tokn=xoxb-… is refused with a
// did-you-mean, and its value is a token all the same).
func (s *Spec) secretName(k string) bool {
	if opt, ok := s.Option(k); ok {
		return opt.Secret
	}
	opt, ok := s.Option(suggest.Closest(k, s.OptionNames()))
	return ok && opt.Secret
}

// RedactURI returns raw with the values of secret options hidden ([Spec.Redact])
// when c describes itself ([Described]), and raw as it is otherwise. The engine uses
// it for the URI at the front of endpoint errors, since a URI may hold a credential
// resolved from ${env:…}.
func RedactURI(c Component, raw string) string {
	if d, ok := c.(Described); ok {
		return d.Spec().Redact(raw)
	}
	return raw
}

// NearMisses returns, for a spec with OpenOptions, the query parameters of u that
// are not options but look like a misspelled one (timeot → timeout), sorted by
// parameter name. Such a parameter is sent on as documented, so validation can only
// warn about it.
func (s *Spec) NearMisses(u *uri.URI) [][2]string {
	if s.OpenOptions == "" {
		return nil
	}
	names := s.OptionNames()
	var out [][2]string
	for k := range u.Params {
		if _, ok := s.Option(k); ok {
			continue
		}
		if m := suggest.Closest(k, names); m != "" {
			out = append(out, [2]string{k, m})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
