package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/arvenza/helix/internal/ask"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
)

// Answers of helix mcp call to the server's questions. An elicitation (a form)
// is answered by the person at the terminal when stdin is one; otherwise, and
// with --no-input, from --elicit key=value pairs and the form's defaults, and
// declined when a required field is left without a value. --elicit pre-answers
// fields in both cases. Sampling is refused: the command has no model of its own.

// answerFlags are the flags that answer the server's questions.
type answerFlags struct {
	elicit  []string
	noInput bool
}

func (f *answerFlags) register(fl *pflag.FlagSet) {
	fl.StringArrayVar(&f.elicit, "elicit", nil, "answer a field of the server's elicitation form: key=value (repeatable)")
	fl.BoolVar(&f.noInput, "no-input", false, "never prompt: answer the server's forms with --elicit values and the forms' defaults, else decline")
}

// answers returns how the command answers: a terminalElicitor reading in and
// writing to out, interactive when in is a terminal and --no-input is not set.
func (f answerFlags) answers(in io.Reader, out io.Writer) (mcpclient.Answers, error) {
	pre := map[string]string{}
	for _, kv := range f.elicit {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return mcpclient.Answers{}, fmt.Errorf("--elicit %q: use key=value (a field of the server's form)", kv)
		}
		pre[strings.TrimSpace(k)] = v
	}
	e := &terminalElicitor{pre: pre, out: out, in: bufio.NewReader(in), interactive: !f.noInput && isTerminalReader(in)}
	return mcpclient.Answers{Elicitor: e, Who: "helix mcp call",
		Hint: "it answers elicitation only (on a terminal, or with --elicit key=value and --no-input): it has no model to sample with"}, nil
}

func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f)
}

// terminalElicitor answers forms for helix mcp call.
type terminalElicitor struct {
	pre         map[string]string // --elicit values by field
	out         io.Writer         // prompts and notes (stderr)
	in          *bufio.Reader
	interactive bool
}

// maxPromptAttempts bounds how often one field is asked again after a wrong value.
const maxPromptAttempts = 5

// formField is one property of a requested schema, with what the prompt shows.
type formField struct {
	name, typ, title, description string
	enum                          []string
	def                           any
	hasDef, required              bool
	min, max                      *float64
	itemEnum                      []string // arrays: the allowed items
}

func (e *terminalElicitor) Elicit(ctx context.Context, q *ask.Elicitation) (*ask.ElicitAnswer, error) {
	fields := formFields(q.Schema)
	known := map[string]bool{}
	for _, f := range fields {
		known[f.name] = true
	}
	content := map[string]any{}
	for _, k := range sortedKeys(e.pre) {
		if !known[k] {
			fmt.Fprintf(e.out, "helix: --elicit %s: the server's form has no field %q; ignored\n", terminalSafe(k), terminalSafe(k))
			continue
		}
		f := fieldNamed(fields, k)
		v, err := f.parse(e.pre[k])
		if err != nil {
			return nil, fmt.Errorf("--elicit %s: %w", k, err)
		}
		content[k] = v
	}
	if !e.interactive {
		return e.unattended(q, fields, content), nil
	}
	fmt.Fprintf(e.out, "\nThe server asks: %s\n", terminalSafe(q.Message))
	action, err := e.choose()
	if err != nil || action != ask.ActionAccept {
		return &ask.ElicitAnswer{Action: action}, err
	}
	for _, f := range fields {
		if _, done := content[f.name]; done {
			continue
		}
		v, ok, err := e.promptField(ctx, f)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return &ask.ElicitAnswer{Action: ask.ActionCancel}, nil
			}
			return nil, err
		}
		if ok {
			content[f.name] = v
		}
	}
	return &ask.ElicitAnswer{Action: ask.ActionAccept, Content: content}, nil
}

// unattended answers without asking: --elicit values, then defaults; a required
// field left empty declines, with the reason on stderr.
func (e *terminalElicitor) unattended(q *ask.Elicitation, fields []formField, content map[string]any) *ask.ElicitAnswer {
	for _, f := range fields {
		if _, done := content[f.name]; !done && f.hasDef {
			content[f.name] = f.def
		}
	}
	if missing := mcpclient.MissingRequired(q.Schema, content); len(missing) > 0 {
		fmt.Fprintf(e.out, "helix: declined the server's form %q: required field %s has no default; answer it with --elicit %s=…\n",
			terminalSafe(q.Message), terminalSafe(strings.Join(missing, ", ")), terminalSafe(missing[0]))
		return &ask.ElicitAnswer{Action: ask.ActionDecline}
	}
	return &ask.ElicitAnswer{Action: ask.ActionAccept, Content: content}
}

// choose asks whether to fill in the form.
func (e *terminalElicitor) choose() (string, error) {
	for range maxPromptAttempts {
		fmt.Fprint(e.out, "Answer? [a]ccept (fill in the form), [d]ecline, [c]ancel: ")
		line, err := e.readLine()
		if err != nil {
			return ask.ActionCancel, nil
		}
		switch strings.ToLower(line) {
		case "", "a", "accept", "y", "yes":
			return ask.ActionAccept, nil
		case "d", "decline", "n", "no":
			return ask.ActionDecline, nil
		case "c", "cancel":
			return ask.ActionCancel, nil
		}
		fmt.Fprintln(e.out, "  type a, d or c")
	}
	return ask.ActionCancel, nil
}

// promptField asks for one field until the answer fits. An empty line keeps the
// default, or leaves an optional field out.
func (e *terminalElicitor) promptField(ctx context.Context, f formField) (any, bool, error) {
	for range maxPromptAttempts {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		fmt.Fprint(e.out, f.prompt())
		line, err := e.readLine()
		if err != nil {
			return nil, false, err
		}
		if line == "" {
			switch {
			case f.hasDef:
				return f.def, true, nil
			case !f.required:
				return nil, false, nil
			}
			fmt.Fprintln(e.out, "  this field is required")
			continue
		}
		v, err := f.parse(line)
		if err == nil {
			return v, true, nil
		}
		fmt.Fprintf(e.out, "  %s\n", terminalSafe(err.Error()))
	}
	return nil, false, fmt.Errorf("no valid value for field %q after %d attempts", f.name, maxPromptAttempts)
}

// readLine reads one line (at most 64 KiB), without its line end.
func (e *terminalElicitor) readLine() (string, error) {
	var b strings.Builder
	for {
		chunk, isPrefix, err := e.in.ReadLine()
		if err != nil {
			if b.Len() > 0 {
				return strings.TrimSpace(b.String()), nil
			}
			return "", err
		}
		if b.Len()+len(chunk) > 64<<10 {
			return "", errors.New("line too long")
		}
		b.Write(chunk)
		if !isPrefix {
			return strings.TrimSpace(b.String()), nil
		}
	}
}

// prompt is the line that asks for f: its name, title, type, allowed values,
// default and description, all terminal-safe (the server wrote them).
func (f formField) prompt() string {
	var b strings.Builder
	b.WriteString("  ")
	b.WriteString(terminalSafe(f.name))
	if f.title != "" && f.title != f.name {
		fmt.Fprintf(&b, " (%s)", terminalSafe(f.title))
	}
	var notes []string
	if f.typ != "" {
		notes = append(notes, terminalSafe(f.typ))
	}
	if f.required {
		notes = append(notes, "required")
	}
	if len(f.enum) > 0 {
		notes = append(notes, "one of "+terminalSafe(strings.Join(f.enum, " | ")))
	}
	if len(f.itemEnum) > 0 {
		notes = append(notes, "comma-separated from "+terminalSafe(strings.Join(f.itemEnum, " | ")))
	}
	if f.hasDef {
		notes = append(notes, "default "+terminalSafe(fmt.Sprint(f.def)))
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " [%s]", strings.Join(notes, ", "))
	}
	if f.description != "" {
		fmt.Fprintf(&b, " — %s", terminalSafe(strings.ReplaceAll(f.description, "\n", " ")))
	}
	b.WriteString(": ")
	return b.String()
}

// parse turns text into a value of f's type and checks it (enum, bounds).
func (f formField) parse(s string) (any, error) {
	switch f.typ {
	case "integer":
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		return n, f.inBounds(float64(n))
	case "number":
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return x, f.inBounds(x)
	case "boolean":
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "yes", "y":
			return true, nil
		case "false", "no", "n":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not true or false", s)
	case "array":
		var items []any
		for _, it := range strings.Split(s, ",") {
			it = strings.TrimSpace(it)
			if it == "" {
				continue
			}
			if len(f.itemEnum) > 0 && !contains(f.itemEnum, it) {
				return nil, fmt.Errorf("%q is not one of %s", it, strings.Join(f.itemEnum, ", "))
			}
			items = append(items, it)
		}
		return items, nil
	}
	if len(f.enum) > 0 && !contains(f.enum, s) {
		return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(f.enum, ", "))
	}
	if n := float64(len([]rune(s))); f.min != nil && n < *f.min || f.max != nil && n > *f.max {
		return nil, fmt.Errorf("%q has %d characters; the form wants %s", s, len([]rune(s)), boundsText(f.min, f.max))
	}
	return s, nil
}

func (f formField) inBounds(x float64) error {
	if f.min != nil && x < *f.min || f.max != nil && x > *f.max {
		return fmt.Errorf("%v is out of range: the form wants %s", x, boundsText(f.min, f.max))
	}
	return nil
}

func boundsText(lo, hi *float64) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%v to %v", *lo, *hi)
	case lo != nil:
		return fmt.Sprintf("at least %v", *lo)
	case hi != nil:
		return fmt.Sprintf("at most %v", *hi)
	}
	return "any"
}

// formFields lists the properties of schema: required ones first, each group by name.
func formFields(schema map[string]any) []formField {
	props, _ := schema["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	fields := make([]formField, 0, len(props))
	for name, p := range props {
		pm, _ := p.(map[string]any)
		f := formField{name: name, required: required[name]}
		f.typ, _ = pm["type"].(string)
		f.title, _ = pm["title"].(string)
		f.description, _ = pm["description"].(string)
		f.def, f.hasDef = pm["default"]
		f.enum = stringsOf(pm["enum"])
		if items, ok := pm["items"].(map[string]any); ok {
			f.itemEnum = stringsOf(items["enum"])
			if alts, ok := items["anyOf"].([]any); ok {
				for _, a := range alts {
					if am, ok := a.(map[string]any); ok {
						if c, ok := am["const"].(string); ok {
							f.itemEnum = append(f.itemEnum, c)
						}
					}
				}
			}
		}
		if one, ok := pm["oneOf"].([]any); ok && len(f.enum) == 0 {
			for _, a := range one {
				if am, ok := a.(map[string]any); ok {
					if c, ok := am["const"].(string); ok {
						f.enum = append(f.enum, c)
					}
				}
			}
		}
		for key, dst := range map[string]**float64{"minimum": &f.min, "maximum": &f.max, "minLength": &f.min, "maxLength": &f.max} {
			if x, ok := pm[key].(float64); ok {
				*dst = &x
			}
		}
		fields = append(fields, f)
	}
	sort.Slice(fields, func(i, j int) bool {
		if fields[i].required != fields[j].required {
			return fields[i].required
		}
		return fields[i].name < fields[j].name
	})
	return fields
}

func fieldNamed(fields []formField, name string) formField {
	for _, f := range fields {
		if f.name == name {
			return f
		}
	}
	return formField{name: name}
}

func stringsOf(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, it := range l {
		if s, ok := it.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, it := range list {
		if it == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
