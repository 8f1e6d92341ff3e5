package cli

//go:generate go run ../../cmd/helix components --markdown ../../docs/components

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/arvenza/helix/internal/component/all"
	"github.com/arvenza/helix/internal/suggest"
	"github.com/arvenza/helix/pkg/component"
)

// regenerateDocs is the command that rewrites docs/components/ from the specs; the
// staleness test and the pages themselves name it.
const regenerateDocs = "go run ./cmd/helix components --markdown docs/components"

func newComponentsCmd() *cobra.Command {
	var asJSON bool
	var mdDir string
	cmd := &cobra.Command{
		Use:   "components [SCHEME]",
		Short: "List the components, or show what a URI of one can say (options, headers)",
		Long: `Without SCHEME, lists every component of this build with its role and summary.
With SCHEME (timer, http-server, https …), shows what you need to write its URI: the
address, every option with its type, default and allowed values, the headers it reads
and writes, and examples. --json prints the same as JSON; --markdown DIR writes the
pages of docs/components/ (` + regenerateDocs + `).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if mdDir != "" {
				if len(args) > 0 || asJSON {
					return configError(fmt.Errorf("--markdown writes every page; give neither SCHEME nor --json"))
				}
				return writeMarkdownPages(mdDir)
			}
			if len(args) == 0 {
				if asJSON {
					return writeJSON(out, all.Specs())
				}
				return writeComponentList(out)
			}
			spec, err := findSpec(args[0])
			if err != nil {
				return configError(err)
			}
			if asJSON {
				return writeJSON(out, spec)
			}
			return writeComponentText(out, spec)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the component specs as JSON")
	cmd.Flags().StringVar(&mdDir, "markdown", "", "write one Markdown page per component into `DIR` (docs/components)")
	return cmd
}

// findSpec looks a scheme up, accepting "timer", "timer:" and "timer://".
func findSpec(arg string) (*component.Spec, error) {
	scheme := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(arg), "//"), ":"))
	if spec := component.SpecOf(scheme); spec != nil {
		return spec, nil
	}
	if why, ok := component.Absent(scheme); ok {
		return nil, fmt.Errorf("component %s:// is not available in this build (%s)", scheme, why)
	}
	var schemes []string
	for _, s := range all.Schemes() {
		schemes = append(schemes, s.Scheme)
	}
	if s := suggest.Closest(scheme, schemes); s != "" {
		return nil, fmt.Errorf("unknown component %q (did you mean %q?)", scheme, s)
	}
	return nil, fmt.Errorf("unknown component %q (components: %s)", scheme, strings.Join(schemes, ", "))
}

// writeJSON writes v as indented JSON for people to read: <, > and & as themselves,
// also inside values whose own MarshalJSON escaped them (the go-sdk's types).
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(unescapeHTML(buf.Bytes()))
	return err
}

// roleText says how a component can be used in a workflow.
func roleText(d component.Direction) string {
	switch d {
	case component.ProducerOnly:
		return "producer: use it as a target"
	case component.ConsumerOnly:
		return "consumer: use it as a trigger"
	}
	return "producer and consumer: use it as a trigger or a target"
}

func writeComponentList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEME\tROLE\tSUMMARY")
	for _, s := range all.Specs() {
		name := s.Scheme
		if len(s.Aliases) > 0 {
			name += ", " + strings.Join(s.Aliases, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, roleShort(s.Direction), s.Summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if planned := component.AbsentSchemes(); len(planned) > 0 {
		if _, err := fmt.Fprintf(w, "\nNot available in this build: %s.", strings.Join(planned, ", ")); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\nRun `helix components SCHEME` for a component's options and headers.\n")
	return err
}

func roleShort(d component.Direction) string {
	switch d {
	case component.ProducerOnly:
		return "target"
	case component.ConsumerOnly:
		return "trigger"
	}
	return "trigger, target"
}

// optionType renders an option's type with its allowed values.
func optionType(o component.Option) string {
	t := string(o.Type)
	if o.Type == component.TypeEnum {
		t = strings.Join(o.Enum, "|")
	}
	if o.Multiple {
		t += " (repeatable)"
	}
	return t
}

// optionFlags renders required and secret.
func optionFlags(o component.Option) string {
	var f []string
	if o.Required {
		f = append(f, "required")
	}
	if o.Secret {
		f = append(f, "secret: write it as ${env:NAME}")
	}
	return strings.Join(f, ", ")
}

func writeComponentText(w io.Writer, s *component.Spec) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:// — %s\n\n", s.Scheme, s.Summary)
	fmt.Fprintf(&b, "  syntax:  %s\n", s.Syntax)
	if len(s.Aliases) > 0 {
		fmt.Fprintf(&b, "  also:    %s\n", strings.Join(schemesWithSuffix(s.Aliases), ", "))
	}
	fmt.Fprintf(&b, "  role:    %s\n", roleText(s.Direction))
	if s.Since != "" {
		fmt.Fprintf(&b, "  since:   %s\n", s.Since)
	}
	if s.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", indent(s.Description, "  "))
	}
	if len(s.Path) > 0 {
		b.WriteString("\nAddress:\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, p := range s.Path {
			req := ""
			if p.Required {
				req = "required"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Name, req, p.Description)
		}
		tw.Flush()
	}
	b.WriteString("\nOptions:\n")
	if len(s.Options) == 0 && s.OpenOptions == "" {
		fmt.Fprintf(&b, "  none: %s:// takes no options\n", s.Scheme)
	} else if len(s.Options) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tTYPE\tDEFAULT\tFOR\tDESCRIPTION")
		for _, o := range s.Options {
			def := o.Default
			if def == "" {
				def = "-"
			}
			desc := o.Description
			if f := optionFlags(o); f != "" {
				desc = "(" + f + ") " + desc
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", o.Name, optionType(o), def, o.Role, desc)
		}
		tw.Flush()
	}
	if s.OpenOptions != "" {
		fmt.Fprintf(&b, "  other query parameters: %s\n", s.OpenOptions)
	} else if len(s.Options) > 0 {
		b.WriteString("  any other option is an error\n")
	}
	if len(s.Headers) > 0 {
		b.WriteString("\nHeaders:\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tTYPE\tUSE\tBY\tDESCRIPTION")
		for _, h := range s.Headers {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", h.Name, h.Type, h.Use, h.Role, h.Description)
		}
		tw.Flush()
	}
	if len(s.Examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, e := range s.Examples {
			fmt.Fprintf(&b, "  %s\n      %s\n", e.URI, e.Description)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func schemesWithSuffix(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s + "://"
	}
	return out
}

func indent(text, prefix string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// markdownPages renders docs/components/: one page per component, named after its
// scheme, and README.md, the index. Keys are file names.
func markdownPages() map[string]string {
	pages := map[string]string{}
	var index strings.Builder
	index.WriteString(generatedNotice)
	index.WriteString("# Components\n\n")
	index.WriteString("Every component is addressed by a URI, `scheme://address?option=value&…`. These pages are\n")
	index.WriteString("generated from each component's spec (`pkg/component/<name>/spec.go`); `helix components\n")
	index.WriteString("SCHEME` prints the same in a terminal, `--json` as JSON. Options are checked when a file is\n")
	index.WriteString("loaded: an unknown option, a value of the wrong type or a missing required option is an error\n")
	index.WriteString("with its position and a did-you-mean (see [configuration](../configuration.md)).\n\n")
	index.WriteString("| component | role | what it does |\n|---|---|---|\n")
	for _, s := range all.Specs() {
		name := "`" + s.Scheme + "://`"
		for _, a := range s.Aliases {
			name += ", `" + a + "://`"
		}
		fmt.Fprintf(&index, "| [%s](%s.md) | %s | %s |\n", name, s.Scheme, roleShort(s.Direction), mdCell(s.Summary))
		pages[s.Scheme+".md"] = markdownPage(s)
	}
	if planned := component.AbsentSchemes(); len(planned) > 0 {
		fmt.Fprintf(&index, "\nNot available in this build (a configuration using them is refused with the reason): %s.\n",
			"`"+strings.Join(schemesWithSuffix(planned), "`, `")+"`")
	}
	pages["README.md"] = index.String()
	return pages
}

const generatedNotice = "<!-- Generated from the component specs by `" + regenerateDocs + "`. Do not edit. -->\n\n"

func markdownPage(s *component.Spec) string {
	var b strings.Builder
	b.WriteString(generatedNotice)
	fmt.Fprintf(&b, "# `%s://`\n\n%s.\n\n", s.Scheme, upperFirst(s.Summary))
	fmt.Fprintf(&b, "- Syntax: `%s`\n", s.Syntax)
	if len(s.Aliases) > 0 {
		fmt.Fprintf(&b, "- Also serves: `%s`\n", strings.Join(schemesWithSuffix(s.Aliases), "`, `"))
	}
	fmt.Fprintf(&b, "- Role: %s\n", roleText(s.Direction))
	if s.Since != "" {
		fmt.Fprintf(&b, "- Since: %s\n", s.Since)
	}
	if s.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(s.Description))
	}
	if len(s.Path) > 0 {
		b.WriteString("\n## Address\n\n| part | required | description |\n|---|---|---|\n")
		for _, p := range s.Path {
			req := ""
			if p.Required {
				req = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p.Name, req, mdCell(p.Description))
		}
	}
	b.WriteString("\n## Options\n\n")
	if len(s.Options) == 0 && s.OpenOptions == "" {
		fmt.Fprintf(&b, "`%s://` takes no options; any option is an error.\n", s.Scheme)
	} else if len(s.Options) > 0 {
		b.WriteString("| option | type | default | for | description | since |\n|---|---|---|---|---|---|\n")
		for _, o := range s.Options {
			def := ""
			if o.Default != "" {
				def = "`" + o.Default + "`"
			}
			desc := mdCell(o.Description)
			if f := optionFlags(o); f != "" {
				desc = "**" + f + "** " + desc
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", o.Name, mdCell(optionType(o)), def, o.Role, desc, o.Since)
		}
		if s.OpenOptions == "" {
			b.WriteString("\nAny other option is an error.\n")
		} else {
			b.WriteString("\n")
		}
	}
	if s.OpenOptions != "" {
		fmt.Fprintf(&b, "Other query parameters: %s.\n", strings.TrimSuffix(s.OpenOptions, "."))
	}
	if len(s.Headers) > 0 {
		b.WriteString("\n## Headers\n\n| header | type | use | by | description |\n|---|---|---|---|---|\n")
		for _, h := range s.Headers {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", h.Name, h.Type, h.Use, h.Role, mdCell(h.Description))
		}
	}
	if len(s.Examples) > 0 {
		b.WriteString("\n## Examples\n\n")
		for _, e := range s.Examples {
			fmt.Fprintf(&b, "- `%s` — %s\n", e.URI, e.Description)
		}
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// mdCell keeps a table cell on one line and its pipes from splitting it.
func mdCell(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// writeMarkdownPages writes markdownPages into dir and removes pages of components
// that no longer exist.
func writeMarkdownPages(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return runtimeError(err)
	}
	pages := markdownPages()
	old, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for _, p := range old {
		if _, keep := pages[filepath.Base(p)]; !keep {
			if err := os.Remove(p); err != nil {
				return runtimeError(err)
			}
		}
	}
	names := make([]string, 0, len(pages))
	for n := range pages {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(pages[n]), 0o644); err != nil {
			return runtimeError(err)
		}
	}
	return nil
}
