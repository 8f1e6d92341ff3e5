package config

import (
	"encoding/base64"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Prompts are declared once, as Shapes (promptShape and the shapes of its
// arguments and messages). Starlang scripts of messages are compiled by pkg/app,
// which also checks workflow ids once every file is merged.

// PromptConfig is one entry of the top-level `prompts:` list.
type PromptConfig struct {
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgumentConfig
	// Messages are rendered per prompts/get; Workflow, instead, produces them.
	Messages []PromptMessageConfig
	Workflow string
	// Completions and CompletionWorkflow answer completion/complete for the
	// prompt's arguments (see [ResourceConfig]).
	Completions           map[string][]string
	CompletionWorkflow    string
	Pos                   Pos
	Path                  string
	WorkflowPos           Pos
	CompletionWorkflowPos Pos
}

// PromptArgumentConfig is one argument of a prompt.
type PromptArgumentConfig struct {
	Name        string
	Title       string
	Description string
	Required    bool
}

// PromptMessageConfig is one message of a prompt: its role and one content.
type PromptMessageConfig struct {
	Role string // user | assistant
	// Exactly one of the contents below is set.
	Text string // ${args.NAME} placeholders are replaced by the arguments
	// Starlang is a script whose value is the content: a string (text) or a
	// content object ({type: image, data: …, mimeType: …}); `args` is the dict of
	// arguments. StarlangNode locates it for compilation.
	Starlang     string
	StarlangNode *yaml.Node
	// ImageData (decoded) or ImageFile, with ImageMIMEType.
	ImageData     []byte
	ImageFile     string
	ImageMIMEType string
	// Resource is the URI of a resource embedded in the message (${args.NAME}
	// placeholders allowed); it is read from the application's resources.
	Resource string
	Pos      Pos
	Path     string
}

var promptArgumentShape = Shape{Type: TypeObject, What: "a prompt argument", Short: "name", Keys: []Key{
	{Name: "name", Required: true, Shape: str("The argument's name; messages read it as args[\"name\"] (Starlang) or ${args.name} (text).")},
	{Name: "title", Shape: str("A human-readable title.")},
	{Name: "description", Shape: str("What the argument is for.")},
	{Name: "required", Shape: Shape{Type: TypeBool, Description: "prompts/get without it is an invalid-params error naming it."}},
}}

var promptImageShape = Shape{Type: TypeObject, What: "an image", Keys: []Key{
	{Name: "data", Shape: str("The image, base64-encoded.")},
	{Name: "file", Shape: str("The image file, read at each prompts/get (relative paths start at this YAML file's directory).")},
	{Name: "mime_type", Shape: str("The image's MIME type (image/png). Default: guessed from the file name, else image/png.")},
}}

var promptContentShape = Shape{Type: TypeObject, What: "a message content", Short: "text",
	Description: "The message's content: text (a string), {starlang: …}, {image: {data|file, mime_type}} or {resource: uri}.", Keys: []Key{
		{Name: "text", Shape: str("Text; ${args.NAME} is replaced by the argument NAME.")},
		{Name: "starlang", Shape: Shape{Type: TypeStarlang, Description: "A Starlang script whose value is the content: a string (text) or a content object such as {\"type\": \"image\", \"data\": …, \"mimeType\": …}. The arguments are the dict args."}},
		{Name: "image", Shape: promptImageShape},
		{Name: "resource", Shape: str("The URI of a resource of this application to embed (read at each prompts/get); ${args.NAME} is replaced.")},
	}}

var promptMessageShape = Shape{Type: TypeObject, What: "a prompt message", Keys: []Key{
	{Name: "role", Shape: Shape{Type: TypeString, What: "message role", Enum: []string{"user", "assistant"}, Default: "user", Description: "user or assistant."}},
	{Name: "content", Required: true, Shape: promptContentShape},
}}

var promptShape = Shape{Type: TypeObject, What: "a prompt", Keys: []Key{
	{Name: "name", Required: true, Shape: str("The prompt's name (prompts/list, prompts/get); unique among prompts. expose, allowed_tools and blocked_tools of a server match it.")},
	{Name: "title", Shape: str("A human-readable title.")},
	{Name: "description", Shape: str("What the prompt is for.")},
	{Name: "arguments", Shape: Shape{Type: TypeList, Items: &promptArgumentShape, Description: "The prompt's arguments."}},
	{Name: "messages", Shape: Shape{Type: TypeList, Items: &promptMessageShape, Description: "The messages, rendered at each prompts/get. Write messages or workflow."}},
	{Name: "workflow", Shape: str("The id of a workflow that produces the messages: body = the arguments (an object of strings); reply = a list of messages ({role, content}) or a string (one user message).")},
	{Name: "completions", Shape: completionsShape},
	{Name: "completion_workflow", Shape: str("The id of a workflow that completes the arguments: body {argument, value, context}, reply a list of strings (or {values, total, hasMore}).")},
}}

// PromptShape returns the declared shape of a `prompts:` entry. Callers must not
// modify the shapes it holds.
func PromptShape() Shape { return promptShape }

func decodePrompt(d *Decoder, n *yaml.Node, p string) (PromptConfig, bool) {
	v := d.Decode(n, p, "a prompt", &promptShape)
	if d.desc != nil || !isMapping(v.Node) {
		return PromptConfig{Pos: d.Pos(v.Node), Path: p}, false
	}
	pc := PromptConfig{
		Name: v.String("name"), Title: v.String("title"), Description: v.String("description"),
		Workflow: v.String("workflow"), CompletionWorkflow: v.String("completion_workflow"),
		Completions: completionLists(v, "completions"),
		Pos:         d.Pos(v.Node), Path: p,
		WorkflowPos: d.Pos(v.NodeOf("workflow")), CompletionWorkflowPos: d.Pos(v.NodeOf("completion_workflow")),
	}
	ok := true
	if v.Has("name") && strings.TrimSpace(pc.Name) == "" {
		d.Errorf(v.NodeOf("name"), v.PathOf("name"), "a prompt's name must not be empty")
		ok = false
	}
	args := map[string]bool{}
	for _, av := range v.Objects("arguments") {
		a := PromptArgumentConfig{Name: av.String("name"), Title: av.String("title"), Description: av.String("description"), Required: av.Bool("required")}
		if strings.TrimSpace(a.Name) == "" {
			d.Errorf(av.Node, av.Path, "a prompt argument needs a name")
			ok = false
			continue
		}
		if args[a.Name] {
			d.Errorf(av.NodeOf("name"), av.PathOf("name"), "argument %q is declared twice", a.Name)
			ok = false
			continue
		}
		args[a.Name] = true
		pc.Arguments = append(pc.Arguments, a)
	}
	argNames := make([]string, 0, len(pc.Arguments))
	for _, a := range pc.Arguments {
		argNames = append(argNames, a.Name)
	}
	switch {
	case v.Has("messages") && v.Has("workflow"):
		d.Errorf(v.NodeOf("workflow"), v.PathOf("workflow"), "a prompt takes messages or workflow, not both").Hint =
			"messages are rendered from the YAML; workflow produces them at run time"
		ok = false
	case !v.Has("messages") && !v.Has("workflow"):
		d.Errorf(v.Node, p, "a prompt needs messages (or a workflow that produces them)").Hint =
			"for example messages: [{role: user, content: \"Summarize ${args.topic}\"}]"
		ok = false
	}
	for _, mv := range v.Objects("messages") {
		m, mok := decodePromptMessage(d, mv, argNames)
		ok = ok && mok
		pc.Messages = append(pc.Messages, m)
	}
	for name := range pc.Completions {
		if !args[name] {
			d.Errorf(v.NodeOf("completions"), KeyPath(v.PathOf("completions"), name), "completions for %q, which is not an argument of prompt %q", name, pc.Name).Hint =
				hintOr(DidYouMean(name, argNames), "declare it under arguments:")
			ok = false
		}
	}
	return pc, ok
}

func decodePromptMessage(d *Decoder, mv *Values, args []string) (PromptMessageConfig, bool) {
	m := PromptMessageConfig{Role: mv.String("role"), Pos: d.Pos(mv.Node), Path: mv.Path}
	c := mv.Object("content")
	if c == nil {
		return m, false
	}
	var kinds []string
	for _, k := range promptContentShape.Keys {
		if c.Has(k.Name) {
			kinds = append(kinds, k.Name)
		}
	}
	if len(kinds) != 1 {
		at := c.Node
		if len(kinds) > 1 {
			at = c.NodeOf(kinds[1])
		}
		d.Errorf(at, c.Path, "a message content is one of text, starlang, image and resource").Hint =
			"write one message per content: a list of messages may mix them"
		return m, false
	}
	ok := true
	switch kinds[0] {
	case "text":
		m.Text = c.String("text")
		ok = checkArgPlaceholders(d, c.NodeOf("text"), c.PathOf("text"), m.Text, args)
	case "starlang":
		m.Starlang, m.StarlangNode = c.String("starlang"), c.NodeOf("starlang")
		if strings.TrimSpace(m.Starlang) == "" {
			d.Errorf(m.StarlangNode, c.PathOf("starlang"), "empty Starlang script")
			ok = false
		}
	case "resource":
		m.Resource = c.String("resource")
		ok = checkArgPlaceholders(d, c.NodeOf("resource"), c.PathOf("resource"), m.Resource, args)
		if ok && !strings.Contains(m.Resource, "${") {
			if err := CheckResourceURI(m.Resource); err != nil {
				d.Errorf(c.NodeOf("resource"), c.PathOf("resource"), "%v", err)
				ok = false
			}
		}
	case "image":
		im := c.Object("image")
		if im == nil {
			return m, false
		}
		m.ImageMIMEType = im.String("mime_type")
		switch {
		case im.Has("data") == im.Has("file"):
			d.Errorf(im.Node, im.Path, "an image takes data (base64) or file").Hint = "for example image: {file: logo.png}"
			ok = false
		case im.Has("data"):
			b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(im.String("data")), ""))
			if err != nil {
				d.Errorf(im.NodeOf("data"), im.PathOf("data"), "image data is not base64: %v", err)
				ok = false
			}
			m.ImageData = b
		default:
			m.ImageFile = resolveFile(d, im.String("file"))
		}
	}
	return m, ok
}

// checkArgPlaceholders reports ${args.NAME} placeholders naming no argument, and
// other placeholders, which prompt texts do not resolve.
func checkArgPlaceholders(d *Decoder, n *yaml.Node, path, s string, args []string) bool {
	ok := true
	for rest := s; ; {
		i := strings.Index(rest, "${")
		if i < 0 {
			return ok
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			d.Errorf(n, path, "unterminated placeholder %q", rest[i:]).Hint = "add the closing }"
			return false
		}
		ph := rest[i+2 : i+j]
		rest = rest[i+j+1:]
		name, isArg := strings.CutPrefix(ph, "args.")
		switch {
		case !isArg:
			d.Errorf(n, path, "placeholder ${%s}: prompt texts only resolve ${args.NAME}", ph).Hint = "use a starlang: content for anything else"
			ok = false
		case !contains(args, name):
			d.Errorf(n, path, "placeholder ${args.%s} names no argument of the prompt", name).Hint =
				hintOr(DidYouMean(name, args), "declare it under arguments:")
			ok = false
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ExpandArgs replaces ${args.NAME} in s by args[NAME] (missing arguments become "").
func ExpandArgs(s string, args map[string]string) string {
	if !strings.Contains(s, "${args.") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${args.")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(args[s[i+len("${args."):i+j]])
		s = s[i+j+1:]
	}
}
