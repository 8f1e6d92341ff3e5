package config

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Resources are declared once, as a Shape (resourceShape): decoding goes through
// [Decoder.Decode] and the JSON Schema of the file comes from the same declaration.
// What the shape cannot say (exactly one content source, uri xor uri_template, the
// template's syntax, base64) is checked by hand below; workflow ids are checked by
// pkg/app once every file is merged (they may live in another file).

// ResourceConfig is one entry of the top-level `resources:` list: a static resource
// (uri) or a resource template (uri_template), whose content is Text, Blob, the
// file File or the reply of the workflow Workflow.
type ResourceConfig struct {
	// URI is the resource's URI (resources/list); URITemplate an RFC 6570 level-1/2
	// template ({id}, {+path}) listed by resources/templates/list. Exactly one is set.
	URI         string
	URITemplate string
	Name        string
	Title       string
	Description string
	MIMEType    string
	// The content: exactly one of Text, Blob (decoded from base64), File (absolute;
	// a relative path is taken from the YAML file's directory) and Workflow.
	Text     string
	HasText  bool
	Blob     []byte
	HasBlob  bool
	File     string
	Workflow string
	// Completions are the static completion values of template variables, by name.
	Completions map[string][]string
	// CompletionWorkflow, when set, answers completion/complete for the template's
	// variables (body {argument, value, context}; reply: a list of strings).
	CompletionWorkflow string
	Pos                Pos
	Path               string
	// WorkflowPos and CompletionWorkflowPos locate the ids, for pkg/app's checks.
	WorkflowPos           Pos
	CompletionWorkflowPos Pos
}

// IsTemplate reports whether the entry is a resource template.
func (r *ResourceConfig) IsTemplate() bool { return r.URITemplate != "" }

// Key is what the entry is known by: its URI or its URI template.
func (r *ResourceConfig) Key() string {
	if r.URITemplate != "" {
		return r.URITemplate
	}
	return r.URI
}

var completionsShape = Shape{Type: TypeMap, Values: &Shape{Type: TypeList, Items: &Shape{Type: TypeString}},
	Description: "Static completion values per argument (or template variable): completion/complete offers those that start with what the user typed, up to 100."}

var resourceShape = Shape{Type: TypeObject, What: "a resource", Keys: []Key{
	{Name: "uri", Shape: str("The resource's URI (test://static-text, file:///…, app://config); unique among resources. Write uri or uri_template.")},
	{Name: "uri_template", Shape: str("An RFC 6570 URI template (app://orders/{id}): the entry is a resource template (resources/templates/list), and reading a URI that matches runs workflow with the variables.")},
	{Name: "name", Required: true, Shape: str("The resource's programmatic name (resources/list). expose, allowed_tools and blocked_tools of a server match it (or the uri).")},
	{Name: "title", Shape: str("A human-readable title.")},
	{Name: "description", Shape: str("What the resource holds.")},
	{Name: "mime_type", Shape: str("The MIME type of the content (text/plain, application/json, image/png). Default: text/plain for text, guessed from the file name or content for file, application/octet-stream for blob, the reply's Content-Type for workflow.")},
	{Name: "text", Shape: str("Text content, served as is.")},
	{Name: "blob", Shape: str("Binary content, base64-encoded.")},
	{Name: "file", Shape: str("A file read at each request (relative paths start at this YAML file's directory); binary unless its MIME type is textual. Subscribers are notified when it changes.")},
	{Name: "workflow", Shape: str("The id of the workflow that produces the content: its reply body is the text (a string or JSON) or the blob (bytes); the Content-Type header sets the MIME type. It gets the URI in the HelixMcpResourceUri header and, for a template, the variables as the body object (and as headers HelixMcpResourceVar<name>).")},
	{Name: "completions", Shape: completionsShape},
	{Name: "completion_workflow", Shape: str("The id of a workflow that completes the template's variables: body {argument, value, context}, reply a list of strings (or {values, total, hasMore}).")},
}}

// ResourceShape returns the declared shape of a `resources:` entry. Callers must not
// modify the shapes it holds.
func ResourceShape() Shape { return resourceShape }

func decodeResource(d *Decoder, n *yaml.Node, p string) (ResourceConfig, bool) {
	v := d.Decode(n, p, "a resource", &resourceShape)
	if d.desc != nil || !isMapping(v.Node) {
		return ResourceConfig{Pos: d.Pos(v.Node), Path: p}, false
	}
	r := ResourceConfig{
		URI: v.String("uri"), URITemplate: v.String("uri_template"),
		Name: v.String("name"), Title: v.String("title"), Description: v.String("description"),
		MIMEType: v.String("mime_type"), Workflow: v.String("workflow"),
		CompletionWorkflow: v.String("completion_workflow"),
		Completions:        completionLists(v, "completions"),
		Pos:                d.Pos(v.Node), Path: p,
		WorkflowPos: d.Pos(v.NodeOf("workflow")), CompletionWorkflowPos: d.Pos(v.NodeOf("completion_workflow")),
	}
	ok := true
	switch {
	case v.Has("uri") && v.Has("uri_template"):
		d.Errorf(v.NodeOf("uri_template"), v.PathOf("uri_template"), "a resource takes uri or uri_template, not both").Hint =
			"uri names one resource; uri_template (app://orders/{id}) a family read through a workflow"
		ok = false
	case !v.Has("uri") && !v.Has("uri_template"):
		d.Errorf(v.Node, p, "a resource needs uri (one resource) or uri_template (a family of resources)").Hint =
			"for example uri: app://config, or uri_template: app://orders/{id} with workflow: get-order"
		ok = false
	case r.URI != "":
		if err := CheckResourceURI(r.URI); err != nil {
			d.Errorf(v.NodeOf("uri"), v.PathOf("uri"), "%v", err).Hint = "write an absolute URI: scheme://…, for example app://config"
			ok = false
		}
	case r.URITemplate != "":
		if _, err := ParseURITemplate(r.URITemplate); err != nil {
			d.Errorf(v.NodeOf("uri_template"), v.PathOf("uri_template"), "%v", err).Hint =
				"variables are {name} (one path segment) or {+name} (may contain /), for example app://orders/{id}"
			ok = false
		}
	default:
		d.Errorf(v.Node, p, "a resource's uri must not be empty")
		ok = false
	}
	if v.Has("name") && strings.TrimSpace(r.Name) == "" {
		d.Errorf(v.NodeOf("name"), v.PathOf("name"), "a resource's name must not be empty")
		ok = false
	}
	var sources []string
	for _, k := range []string{"text", "blob", "file", "workflow"} {
		if v.Has(k) {
			sources = append(sources, k)
		}
	}
	switch {
	case len(sources) > 1:
		d.Errorf(v.NodeOf(sources[1]), v.PathOf(sources[1]), "a resource takes one of text, blob, file and workflow; this one has %s", strings.Join(sources, " and ")).Hint =
			"keep the one that produces the content"
		ok = false
	case len(sources) == 0:
		d.Errorf(v.Node, p, "a resource needs its content: text, blob (base64), file or workflow").Hint =
			"for example text: \"hello\", or file: docs/readme.md, or workflow: get-order"
		ok = false
	case r.URITemplate != "" && sources[0] != "workflow":
		d.Errorf(v.NodeOf(sources[0]), v.PathOf(sources[0]), "a resource template needs workflow: its content depends on the variables").Hint =
			"add workflow: ID (it gets the variables as its body), or use uri for a fixed resource"
		ok = false
	}
	if v.Has("text") {
		r.Text, r.HasText = v.String("text"), true
	}
	if v.Has("blob") {
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(v.String("blob")), ""))
		if err != nil {
			d.Errorf(v.NodeOf("blob"), v.PathOf("blob"), "blob is not base64: %v", err).Hint = "encode the bytes with base64 (standard alphabet, with padding)"
			ok = false
		}
		r.Blob, r.HasBlob = b, true
	}
	if v.Has("file") {
		r.File = resolveFile(d, v.String("file"))
		if strings.TrimSpace(v.String("file")) == "" {
			d.Errorf(v.NodeOf("file"), v.PathOf("file"), "file must name a file")
			ok = false
		}
	}
	if (len(r.Completions) > 0 || r.CompletionWorkflow != "") && r.URITemplate == "" {
		at := "completions"
		if !v.Has(at) {
			at = "completion_workflow"
		}
		d.Errorf(v.NodeOf(at), v.PathOf(at), "%s is only for a resource template (uri_template): a fixed resource has no variables", at)
		ok = false
	}
	if r.URITemplate != "" {
		if t, err := ParseURITemplate(r.URITemplate); err == nil {
			for name := range r.Completions {
				if !t.HasVar(name) {
					d.Errorf(v.NodeOf("completions"), KeyPath(v.PathOf("completions"), name), "completions for %q, which is not a variable of %s", name, r.URITemplate).Hint =
						hintOr(DidYouMean(name, t.Vars()), "the variables are "+strings.Join(t.Vars(), ", "))
					ok = false
				}
			}
		}
	}
	return r, ok
}

// resolveFile makes a relative path relative to the directory of the YAML file
// being decoded, so that a configuration reads the same files wherever helix runs.
func resolveFile(d *Decoder, name string) string {
	name = strings.TrimSpace(name)
	if name == "" || filepath.IsAbs(name) {
		return name
	}
	base := "."
	if d.file != "" {
		base = filepath.Dir(d.file)
	}
	abs, err := filepath.Abs(filepath.Join(base, name))
	if err != nil {
		return filepath.Join(base, name)
	}
	return abs
}

// completionLists reads a completions: map of string lists.
func completionLists(v *Values, key string) map[string][]string {
	pairs := v.Pairs(key)
	if len(pairs) == 0 {
		return nil
	}
	out := make(map[string][]string, len(pairs))
	for _, p := range pairs {
		n := p.Value
		if n == nil || n.Kind != yaml.SequenceNode {
			continue
		}
		var vals []string
		for _, it := range n.Content {
			if it.Kind == yaml.ScalarNode {
				vals = append(vals, it.Value)
			}
		}
		out[p.Key] = vals
	}
	return out
}

// CheckResourceURI reports a resource URI that is not absolute (scheme:…).
func CheckResourceURI(u string) error {
	i := strings.Index(u, ":")
	if i <= 0 || !uriScheme.MatchString(u[:i]) || strings.ContainsAny(u, " \t\n") {
		return fmt.Errorf("resource uri %q is not an absolute URI", u)
	}
	if _, err := url.Parse(u); err != nil {
		return fmt.Errorf("resource uri %q is not a valid URI: %v", u, err)
	}
	return nil
}

// templateForbidden are the characters RFC 6570 does not allow in a template's
// literals (besides controls); the go-sdk refuses templates that contain them.
const templateForbidden = " \"'<>\\^`|"

var (
	uriScheme   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)
	templateVar = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
)

// URITemplate is a parsed resource template: literal text and {name} / {+name}
// variables (RFC 6570 simple and reserved expansion, the forms MCP clients use).
type URITemplate struct {
	Raw   string
	parts []templatePart
	re    *regexp.Regexp
}

type templatePart struct {
	literal  string
	name     string
	reserved bool // {+name}: may contain / and other reserved characters
}

// ParseURITemplate parses t. Operators other than + ({?q}, {#f}, {/p}), modifiers
// ({id*}, {id:3}) and lists ({a,b}) are refused: they would match URIs in ways a
// reader of the YAML would not expect.
func ParseURITemplate(t string) (*URITemplate, error) {
	if err := CheckResourceURI(strings.NewReplacer("{", "", "}", "").Replace(t)); err != nil {
		return nil, fmt.Errorf("uri_template %q is not an absolute URI template", t)
	}
	ut := &URITemplate{Raw: t}
	var re strings.Builder
	re.WriteString("^")
	seen := map[string]bool{}
	rest := t
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			if bad := strings.IndexAny(rest, templateForbidden); bad >= 0 {
				return nil, fmt.Errorf("uri_template %q: %q is not allowed in a URI template (percent-encode it)", t, rest[bad])
			}
			ut.parts = append(ut.parts, templatePart{literal: rest})
			re.WriteString(regexp.QuoteMeta(rest))
			break
		}
		if rest[i] == '}' {
			return nil, fmt.Errorf("uri_template %q has a } without {", t)
		}
		if i > 0 {
			if bad := strings.IndexAny(rest[:i], templateForbidden); bad >= 0 {
				return nil, fmt.Errorf("uri_template %q: %q is not allowed in a URI template (percent-encode it)", t, rest[bad])
			}
			ut.parts = append(ut.parts, templatePart{literal: rest[:i]})
			re.WriteString(regexp.QuoteMeta(rest[:i]))
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("uri_template %q has an unterminated {", t)
		}
		expr := rest[i+1 : i+j]
		rest = rest[i+j+1:]
		reserved := strings.HasPrefix(expr, "+")
		name := strings.TrimPrefix(expr, "+")
		if !templateVar.MatchString(name) {
			return nil, fmt.Errorf("uri_template %q: {%s} is not a variable Helix supports", t, expr)
		}
		if seen[name] {
			return nil, fmt.Errorf("uri_template %q uses {%s} twice", t, name)
		}
		seen[name] = true
		ut.parts = append(ut.parts, templatePart{name: name, reserved: reserved})
		if reserved {
			re.WriteString("(.+?)")
		} else {
			re.WriteString("([^/?#]+)")
		}
	}
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c < 0x20 || c == 0x7f:
			return nil, fmt.Errorf("uri_template %q contains a control character", t)
		case c == '%' && (i+2 >= len(t) || !isHex(t[i+1]) || !isHex(t[i+2])):
			return nil, fmt.Errorf("uri_template %q: %% must start a percent-encoded byte (%%2F)", t)
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("uri_template %q has no variable: use uri for a fixed resource", t)
	}
	re.WriteString("$")
	ut.re = regexp.MustCompile(re.String())
	return ut, nil
}

// Vars lists the template's variables in order.
func (t *URITemplate) Vars() []string {
	var out []string
	for _, p := range t.parts {
		if p.name != "" {
			out = append(out, p.name)
		}
	}
	return out
}

// HasVar reports whether name is a variable of t.
func (t *URITemplate) HasVar(name string) bool {
	for _, p := range t.parts {
		if p.name == name {
			return true
		}
	}
	return false
}

// Match returns the variables of u when u matches the template (values are
// percent-decoded), or false.
func (t *URITemplate) Match(u string) (map[string]string, bool) {
	m := t.re.FindStringSubmatch(u)
	if m == nil {
		return nil, false
	}
	vars := make(map[string]string, len(m)-1)
	k := 1
	for _, p := range t.parts {
		if p.name == "" {
			continue
		}
		val := m[k]
		k++
		if dec, err := url.PathUnescape(val); err == nil {
			val = dec
		}
		vars[p.name] = val
	}
	return vars, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
