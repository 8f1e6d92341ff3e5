package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/exchange"
)

// Headers of the exchanges that resource workflows get.
const (
	// headerMcpResourceURI is the URI being read (resources/read).
	headerMcpResourceURI = "HelixMcpResourceUri"
	// headerMcpResourceVarPrefix + a template variable's name carries its value
	// (also in the body object).
	headerMcpResourceVarPrefix = "HelixMcpResourceVar"
	// headerMcpPromptName is the prompt being rendered by a prompt workflow.
	headerMcpPromptName = "HelixMcpPromptName"
)

// maxResourceBytes bounds what one read of a file resource returns, so that a
// resource pointing at a huge file cannot exhaust memory.
const maxResourceBytes = 32 << 20

// primitives are the application's resources and prompts, built once; each MCP
// server offers the ones its expose list selects.
type primitives struct {
	resources []*mcpserver.Resource
	prompts   []*mcpserver.Prompt
	// keys are the URIs / URI templates / names expose lists may use.
	resourceByKey map[string][]*mcpserver.Resource
	promptByName  map[string]*mcpserver.Prompt
	// fixed serves embedded resources of prompt messages.
	fixed map[string]*mcpserver.Resource
	all   []*mcpserver.Resource
}

// buildPrimitives turns `resources:` and `prompts:` into what the MCP servers
// offer, checking what needs the whole configuration: duplicate URIs and names,
// workflow ids (with did-you-mean), files that do not exist yet (a warning: they
// are read at each request).
func (a *App) buildPrimitives() *primitives {
	p := &primitives{resourceByKey: map[string][]*mcpserver.Resource{}, promptByName: map[string]*mcpserver.Prompt{}, fixed: map[string]*mcpserver.Resource{}}
	seenURI := map[string]config.Pos{}
	for i := range a.cfg.Resources {
		rc := &a.cfg.Resources[i]
		if first, dup := seenURI[rc.Key()]; dup {
			a.errs = append(a.errs, &config.Error{Pos: rc.Pos, Path: rc.Path,
				Msg: fmt.Sprintf("duplicate resource %q: already declared at %s", rc.Key(), first), Hint: "each resource URI (and URI template) is declared once"})
			continue
		}
		seenURI[rc.Key()] = rc.Pos
		r := a.buildResource(rc, p)
		if r == nil {
			continue
		}
		p.resources = append(p.resources, r)
		p.all = append(p.all, r)
		if r.URITemplate == "" {
			p.fixed[r.URI] = r
		}
		for _, k := range []string{rc.Key(), rc.Name} {
			p.resourceByKey[k] = append(p.resourceByKey[k], r)
		}
	}
	a.forgetNoTriggerWarnings()
	seenPrompt := map[string]config.Pos{}
	for i := range a.cfg.Prompts {
		pc := &a.cfg.Prompts[i]
		if first, dup := seenPrompt[pc.Name]; dup {
			a.errs = append(a.errs, &config.Error{Pos: pc.Pos, Path: pc.Path,
				Msg: fmt.Sprintf("duplicate prompt %q: already declared at %s", pc.Name, first), Hint: "prompt names must be unique"})
			continue
		}
		seenPrompt[pc.Name] = pc.Pos
		if pr := a.buildPrompt(pc, p); pr != nil {
			p.prompts = append(p.prompts, pr)
			p.promptByName[pr.Name] = pr
		}
	}
	return p
}

// forgetNoTriggerWarnings drops the load warning "workflow X has no trigger: …
// never runs" of the workflows that resources and prompts run: they run without
// a trigger (a trigger would also make them MCP tools).
func (a *App) forgetNoTriggerWarnings() {
	used := map[string]bool{}
	for _, r := range a.cfg.Resources {
		used[r.Workflow], used[r.CompletionWorkflow] = true, true
	}
	for _, p := range a.cfg.Prompts {
		used[p.Workflow], used[p.CompletionWorkflow] = true, true
	}
	kept := a.cfg.Warnings[:0]
	for _, w := range a.cfg.Warnings {
		if id, ok := noTriggerWorkflow(w.Msg); ok && used[id] {
			continue
		}
		kept = append(kept, w)
	}
	a.cfg.Warnings = kept
}

// noTriggerWorkflow returns X of the warning `workflow "X" has no trigger: …`.
func noTriggerWorkflow(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, "workflow ")
	if !ok {
		return "", false
	}
	var id string
	if _, err := fmt.Sscanf(rest, "%q", &id); err != nil {
		return "", false
	}
	return id, strings.HasPrefix(rest[len(fmt.Sprintf("%q", id)):], " has no trigger:")
}

// checkWorkflow reports an id that names no workflow, tool, agent or pipeline.
func (a *App) checkWorkflow(id string, pos config.Pos, path, key string) bool {
	if _, ok := a.workflowPos(id); ok {
		return true
	}
	var ids []string
	for _, wf := range a.hc.Workflows() {
		ids = append(ids, wf.ID)
	}
	a.errs = append(a.errs, &config.Error{Pos: pos, Path: path + "." + key,
		Msg:  fmt.Sprintf("%s %q names no workflow, tool, agent or pipeline", key, id),
		Hint: hintOr(config.DidYouMean(id, ids), "declare it under workflows: (a trigger direct://ID lets nothing else call it)")})
	return false
}

func hintOr(h, def string) string {
	if h != "" {
		return h
	}
	return def
}

func (a *App) buildResource(rc *config.ResourceConfig, p *primitives) *mcpserver.Resource {
	r := &mcpserver.Resource{URI: rc.URI, URITemplate: rc.URITemplate, Name: rc.Name, Title: rc.Title,
		Description: rc.Description, MIMEType: rc.MIMEType}
	switch {
	case rc.HasText:
		if r.MIMEType == "" {
			r.MIMEType = "text/plain"
		}
		text := rc.Text
		r.Read = func(context.Context, string, map[string]string) (*mcpserver.ResourceContent, error) {
			return &mcpserver.ResourceContent{Text: text}, nil
		}
	case rc.HasBlob:
		if r.MIMEType == "" {
			r.MIMEType = "application/octet-stream"
		}
		blob := rc.Blob
		r.Read = func(context.Context, string, map[string]string) (*mcpserver.ResourceContent, error) {
			return &mcpserver.ResourceContent{Blob: blob, IsBlob: true}, nil
		}
	case rc.File != "":
		if _, err := os.Stat(rc.File); err != nil {
			a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: rc.Pos, Path: rc.Path + ".file",
				Msg: fmt.Sprintf("file %s cannot be read now (%v); reads of %s fail until it can", rc.File, err, rc.URI)})
		}
		if r.MIMEType == "" {
			r.MIMEType = mime.TypeByExtension(filepath.Ext(rc.File))
		}
		file, declared := rc.File, r.MIMEType
		r.Read = func(context.Context, string, map[string]string) (*mcpserver.ResourceContent, error) {
			return readFileResource(file, declared)
		}
		r.Stamp = func() string { return fileStamp(file) }
	case rc.Workflow != "":
		if !a.checkWorkflow(rc.Workflow, rc.WorkflowPos, rc.Path, "workflow") {
			return nil
		}
		r.Read = a.workflowReader(rc.Workflow, r.MIMEType)
	default:
		return nil
	}
	if rc.URITemplate != "" {
		t, err := config.ParseURITemplate(rc.URITemplate)
		if err != nil {
			return nil // reported at load
		}
		r.Match = t.Match
		r.Complete = a.completer(rc.Completions, rc.CompletionWorkflow, rc.CompletionWorkflowPos, rc.Path)
	}
	return r
}

// readFileResource reads file through an os.Root of its directory, so that a
// symlink put in its place cannot make the server read outside that directory
// (as file:// confines names to its base). The content is text when the MIME type
// is textual, else when it is valid UTF-8 without NUL bytes and no MIME type was
// declared; otherwise a blob.
func readFileResource(file, declared string) (*mcpserver.ResourceContent, error) {
	root, err := os.OpenRoot(filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(filepath.Base(file))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxResourceBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxResourceBytes {
		return nil, fmt.Errorf("file %s is larger than %d bytes", file, maxResourceBytes)
	}
	mt := declared
	if mt == "" {
		mt = http.DetectContentType(data)
	}
	if isTextual(mt) || (declared == "" && utf8.Valid(data) && !bytes.ContainsRune(data, 0)) {
		if declared == "" && !isTextual(mt) {
			mt = "text/plain; charset=utf-8"
		}
		return &mcpserver.ResourceContent{MIMEType: mt, Text: string(data)}, nil
	}
	return &mcpserver.ResourceContent{MIMEType: mt, Blob: data, IsBlob: true}, nil
}

// fileStamp fingerprints a file cheaply: size and modification time.
func fileStamp(file string) string {
	st, err := os.Stat(file)
	if err != nil {
		return "missing"
	}
	return fmt.Sprintf("%d/%d", st.Size(), st.ModTime().UnixNano())
}

func isTextual(mt string) bool {
	base, _, _ := strings.Cut(mt, ";")
	base = strings.TrimSpace(strings.ToLower(base))
	return strings.HasPrefix(base, "text/") || base == "application/json" || strings.HasSuffix(base, "+json") ||
		base == "application/xml" || strings.HasSuffix(base, "+xml") || base == "application/yaml" ||
		base == "application/javascript" || base == "application/x-yaml"
}

// workflowReader reads a resource by running workflow id: the body is the
// template's variables (an empty object for a fixed resource), the URI is in
// HelixMcpResourceUri and each variable in HelixMcpResourceVar<name>. The reply
// body is the content: a string is text, bytes are a blob unless the
// Content-Type is textual, anything else is JSON text. A reply without a body
// means there is no such resource.
func (a *App) workflowReader(id, declared string) func(context.Context, string, map[string]string) (*mcpserver.ResourceContent, error) {
	return func(ctx context.Context, uri string, vars map[string]string) (*mcpserver.ResourceContent, error) {
		body := make(map[string]any, len(vars))
		for k, v := range vars {
			body[k] = v
		}
		ex := exchange.NewWithBody(exchange.InOut, body)
		msg := ex.In()
		msg.SetHeader(headerMcpResourceURI, uri)
		for k, v := range vars {
			msg.SetHeader(headerMcpResourceVarPrefix+k, v)
		}
		if err := a.runWorkflow(ctx, id, ex); err != nil {
			return nil, err
		}
		out := ex.In()
		mt := out.HeaderString(exchange.HeaderContentType)
		if mt == "" {
			mt = declared
		}
		switch b := out.Body().(type) {
		case nil:
			return nil, fmt.Errorf("%w: workflow %s answered nothing for %s", mcpserver.ErrResourceNotFound, id, uri)
		case string:
			if mt == "" {
				mt = "text/plain"
			}
			return &mcpserver.ResourceContent{MIMEType: mt, Text: b}, nil
		case []byte:
			if isTextual(mt) {
				return &mcpserver.ResourceContent{MIMEType: mt, Text: string(b)}, nil
			}
			if mt == "" {
				mt = "application/octet-stream"
			}
			return &mcpserver.ResourceContent{MIMEType: mt, Blob: b, IsBlob: true}, nil
		default:
			data, err := json.Marshal(b)
			if err != nil {
				return nil, fmt.Errorf("workflow %s: reply is not JSON: %w", id, err)
			}
			if mt == "" {
				mt = "application/json"
			}
			return &mcpserver.ResourceContent{MIMEType: mt, Text: string(data)}, nil
		}
	}
}

// runWorkflow runs ex through workflow id; the run ends when ctx ends or when the
// engine abandons draining at Stop.
func (a *App) runWorkflow(ctx context.Context, id string, ex *exchange.Exchange) error {
	if err := a.hc.RunUntilStop(ctx, id, ex); err != nil {
		return err
	}
	return ex.Exception()
}

// completer is the CompleteFunc of static lists and/or a workflow (the workflow
// wins for the arguments it is asked about; lists answer when there is none).
func (a *App) completer(lists map[string][]string, wf string, pos config.Pos, path string) mcpserver.CompleteFunc {
	if wf != "" {
		if !a.checkWorkflow(wf, pos, path, "completion_workflow") {
			return nil
		}
		return func(ctx context.Context, argument, value string, argCtx map[string]string) (mcpserver.Completion, error) {
			if argCtx == nil {
				argCtx = map[string]string{}
			}
			ctxAny := make(map[string]any, len(argCtx))
			for k, v := range argCtx {
				ctxAny[k] = v
			}
			ex := exchange.NewWithBody(exchange.InOut, map[string]any{"argument": argument, "value": value, "context": ctxAny})
			if err := a.runWorkflow(ctx, wf, ex); err != nil {
				return mcpserver.Completion{}, err
			}
			return completionFromReply(ex.In().Body())
		}
	}
	if len(lists) > 0 {
		return mcpserver.StaticCompletions(lists)
	}
	return nil
}

// completionFromReply reads a completion workflow's reply: a list of strings, or
// {values, total, hasMore}.
func completionFromReply(body any) (mcpserver.Completion, error) {
	if s, ok := body.(string); ok {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err == nil {
			body = v
		}
	}
	if b, ok := body.([]byte); ok {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return mcpserver.Completion{}, fmt.Errorf("completion reply is not JSON: %w", err)
		}
		body = v
	}
	strs := func(l []any) []string {
		out := make([]string, 0, len(l))
		for _, x := range l {
			out = append(out, exchange.Stringify(x))
		}
		return out
	}
	switch v := body.(type) {
	case nil:
		return mcpserver.Completion{}, nil
	case []any:
		return mcpserver.Completion{Values: strs(v)}, nil
	case []string:
		return mcpserver.Completion{Values: v}, nil
	case map[string]any:
		c := mcpserver.Completion{}
		if l, ok := v["values"].([]any); ok {
			c.Values = strs(l)
		}
		switch t := v["total"].(type) {
		case float64:
			c.Total = int(t)
		case int:
			c.Total = t
		case int64:
			c.Total = int(t)
		}
		c.HasMore, _ = v["hasMore"].(bool)
		return c, nil
	}
	return mcpserver.Completion{}, fmt.Errorf("completion reply is %T: want a list of strings or {values, total, hasMore}", body)
}

func (a *App) buildPrompt(pc *config.PromptConfig, p *primitives) *mcpserver.Prompt {
	pr := &mcpserver.Prompt{Name: pc.Name, Title: pc.Title, Description: pc.Description}
	for _, arg := range pc.Arguments {
		pr.Arguments = append(pr.Arguments, mcpserver.PromptArgument{Name: arg.Name, Title: arg.Title, Description: arg.Description, Required: arg.Required})
	}
	pr.Complete = a.completer(pc.Completions, pc.CompletionWorkflow, pc.CompletionWorkflowPos, pc.Path)
	if pc.Workflow != "" {
		if !a.checkWorkflow(pc.Workflow, pc.WorkflowPos, pc.Path, "workflow") {
			return nil
		}
		pr.Get = a.promptWorkflow(pc.Name, pc.Workflow)
		return pr
	}
	renders := make([]func(context.Context, map[string]string) (*sdk.PromptMessage, error), 0, len(pc.Messages))
	ok := true
	for _, m := range pc.Messages {
		r := a.messageRenderer(m, p)
		if r == nil {
			ok = false
			continue
		}
		renders = append(renders, r)
	}
	if !ok {
		return nil
	}
	pr.Get = func(ctx context.Context, args map[string]string) ([]*sdk.PromptMessage, error) {
		out := make([]*sdk.PromptMessage, 0, len(renders))
		for _, r := range renders {
			m, err := r(ctx, args)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
		return out, nil
	}
	return pr
}

func (a *App) messageRenderer(m config.PromptMessageConfig, p *primitives) func(context.Context, map[string]string) (*sdk.PromptMessage, error) {
	role := sdk.Role(m.Role)
	if role == "" {
		role = "user"
	}
	switch {
	case m.Starlang != "":
		pos := step.ScriptPos(m.Pos.File, m.StarlangNode)
		script, err := starlang.Compile(pos.File, pos.Line, pos.Col, m.Starlang, a.bc.Starlang)
		if err != nil {
			a.errs = append(a.errs, &config.Error{Pos: pos, Path: m.Path + ".content.starlang", Msg: err.Error()})
			return nil
		}
		return func(ctx context.Context, args map[string]string) (*sdk.PromptMessage, error) {
			argsAny := make(map[string]any, len(args))
			for k, v := range args {
				argsAny[k] = v
			}
			ex := exchange.NewWithBody(exchange.InOut, argsAny)
			ex.SetVariable("args", argsAny)
			res, err := script.EvalValue(ctx, ex)
			if err != nil {
				return nil, err
			}
			return messageFromValue(role, res.Value)
		}
	case m.ImageData != nil || m.ImageFile != "":
		data, file, mt := m.ImageData, m.ImageFile, m.ImageMIMEType
		if mt == "" && file != "" {
			mt = mime.TypeByExtension(filepath.Ext(file))
		}
		if mt == "" {
			mt = "image/png"
		}
		if file != "" {
			if _, err := os.Stat(file); err != nil {
				a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: m.Pos, Path: m.Path + ".content.image.file",
					Msg: fmt.Sprintf("image file %s cannot be read now (%v); the prompt fails until it can", file, err)})
			}
		}
		return func(context.Context, map[string]string) (*sdk.PromptMessage, error) {
			b := data
			if file != "" {
				c, err := readFileResource(file, mt)
				if err != nil {
					return nil, err
				}
				b = c.Blob
			}
			return &sdk.PromptMessage{Role: role, Content: &sdk.ImageContent{Data: b, MIMEType: mt}}, nil
		}
	case m.Resource != "":
		tmpl := m.Resource
		if !strings.Contains(tmpl, "${") {
			if _, known := p.fixed[tmpl]; !known && !matchesTemplate(p, tmpl) {
				a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: m.Pos, Path: m.Path + ".content.resource",
					Msg: fmt.Sprintf("resource %q is not declared under resources: (declare it before the prompt); the prompt fails until it is", tmpl)})
			}
		}
		return func(ctx context.Context, args map[string]string) (*sdk.PromptMessage, error) {
			uri := config.ExpandArgs(tmpl, args)
			r, vars, ok := lookupResource(p, uri)
			if !ok {
				return nil, fmt.Errorf("%w: resource %q does not exist", mcpserver.ErrInvalidPromptArguments, uri)
			}
			c, err := r.Read(ctx, uri, vars)
			if err != nil {
				return nil, err
			}
			mt := c.MIMEType
			if mt == "" {
				mt = r.MIMEType
			}
			rc := &sdk.ResourceContents{URI: uri, MIMEType: mt, Text: c.Text}
			if c.IsBlob {
				rc.Text, rc.Blob = "", c.Blob
			}
			return &sdk.PromptMessage{Role: role, Content: &sdk.EmbeddedResource{Resource: rc}}, nil
		}
	default:
		text := m.Text
		return func(_ context.Context, args map[string]string) (*sdk.PromptMessage, error) {
			return &sdk.PromptMessage{Role: role, Content: &sdk.TextContent{Text: config.ExpandArgs(text, args)}}, nil
		}
	}
}

func matchesTemplate(p *primitives, uri string) bool {
	_, _, ok := lookupResource(p, uri)
	return ok
}

// lookupResource finds the resource uri reads among all the application's
// resources (prompts embed any of them, whichever server serves the prompt).
func lookupResource(p *primitives, uri string) (*mcpserver.Resource, map[string]string, bool) {
	if r, ok := p.fixed[uri]; ok {
		return r, nil, true
	}
	for _, r := range p.all {
		if r.Match == nil {
			continue
		}
		if vars, ok := r.Match(uri); ok {
			return r, vars, true
		}
	}
	return nil, nil, false
}

// messageFromValue makes a message of a script's value: a string is text, a dict
// an MCP content object ({"type": "image", "data": …, "mimeType": …}).
func messageFromValue(role sdk.Role, v any) (*sdk.PromptMessage, error) {
	switch t := v.(type) {
	case nil:
		return &sdk.PromptMessage{Role: role, Content: &sdk.TextContent{Text: ""}}, nil
	case string:
		return &sdk.PromptMessage{Role: role, Content: &sdk.TextContent{Text: t}}, nil
	case map[string]any:
		return messageFromJSON(map[string]any{"role": string(role), "content": t})
	}
	return &sdk.PromptMessage{Role: role, Content: &sdk.TextContent{Text: exchange.Stringify(v)}}, nil
}

func messageFromJSON(v map[string]any) (*sdk.PromptMessage, error) {
	if c, ok := v["content"].(string); ok {
		v["content"] = map[string]any{"type": "text", "text": c}
	}
	if _, ok := v["role"]; !ok {
		v["role"] = "user"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m sdk.PromptMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a prompt message: %w", err)
	}
	if m.Role != "user" && m.Role != "assistant" {
		return nil, fmt.Errorf("message role %q: want user or assistant", m.Role)
	}
	return &m, nil
}

// promptWorkflow renders a prompt by running workflow id with the arguments as
// its body; the reply is a string (one user message) or a list of messages
// ({role, content}; content a string or an MCP content object).
func (a *App) promptWorkflow(name, id string) func(context.Context, map[string]string) ([]*sdk.PromptMessage, error) {
	return func(ctx context.Context, args map[string]string) ([]*sdk.PromptMessage, error) {
		body := make(map[string]any, len(args))
		for k, v := range args {
			body[k] = v
		}
		ex := exchange.NewWithBody(exchange.InOut, body)
		ex.In().SetHeader(headerMcpPromptName, name)
		if err := a.runWorkflow(ctx, id, ex); err != nil {
			return nil, err
		}
		reply := ex.In().Body()
		if b, ok := reply.([]byte); ok {
			reply = string(b)
		}
		if s, ok := reply.(string); ok {
			var v any
			if json.Unmarshal([]byte(s), &v) != nil {
				return []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: s}}}, nil
			}
			if _, isList := v.([]any); !isList {
				return []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: s}}}, nil
			}
			reply = v
		}
		list, ok := reply.([]any)
		if !ok {
			return nil, fmt.Errorf("workflow %s answered %T: want a list of messages or a string", id, reply)
		}
		out := make([]*sdk.PromptMessage, 0, len(list))
		for i, it := range list {
			var m *sdk.PromptMessage
			var err error
			switch t := it.(type) {
			case string:
				m = &sdk.PromptMessage{Role: "user", Content: &sdk.TextContent{Text: t}}
			case map[string]any:
				m, err = messageFromJSON(t)
			default:
				err = fmt.Errorf("a message is %T", it)
			}
			if err != nil {
				return nil, fmt.Errorf("workflow %s: message %d: %w", id, i, err)
			}
			out = append(out, m)
		}
		return out, nil
	}
}

// selectPrimitives gives opts the resources and prompts its server offers and
// takes their names out of opts.Expose, which then lists only tools: a server
// without an expose list offers every resource and prompt; with one, those whose
// URI (or URI template) or name it lists.
func (p *primitives) selectPrimitives(opts *mcpserver.Options, isWorkflow func(string) bool) {
	if p == nil || (len(p.resources) == 0 && len(p.prompts) == 0) {
		return
	}
	if opts.Expose == nil {
		opts.Resources, opts.Prompts = p.resources, p.prompts
		return
	}
	pickedR := map[*mcpserver.Resource]bool{}
	pickedP := map[*mcpserver.Prompt]bool{}
	var tools []string
	for _, id := range opts.Expose {
		rs, isR := p.resourceByKey[id]
		pr, isP := p.promptByName[id]
		for _, r := range rs {
			pickedR[r] = true
		}
		if isP {
			pickedP[pr] = true
		}
		if (!isR && !isP) || isWorkflow(id) {
			tools = append(tools, id)
		}
	}
	opts.Expose = tools
	if opts.Expose == nil {
		opts.Expose = []string{}
	}
	for _, r := range p.resources {
		if pickedR[r] {
			opts.Resources = append(opts.Resources, r)
		}
	}
	for _, pr := range p.prompts {
		if pickedP[pr] {
			opts.Prompts = append(opts.Prompts, pr)
		}
	}
}

// ListedPrimitives returns the resources and prompts of server si that its
// allowed_tools/blocked_tools let clients see (by name), as ListedTools does for
// tools. The manifest and `helix mcp list` use it.
func (a *App) ListedPrimitives(si mcpserver.Info) ([]mcpserver.ResourceInfo, []mcpserver.PromptInfo) {
	sec := a.securityByID[si.ID]
	if sec == nil {
		return si.Resources, si.Prompts
	}
	var rs []mcpserver.ResourceInfo
	for _, r := range si.Resources {
		if sec.listed(r.Name) {
			rs = append(rs, r)
		}
	}
	var ps []mcpserver.PromptInfo
	for _, p := range si.Prompts {
		if sec.listed(p.Name) {
			ps = append(ps, p)
		}
	}
	return rs, ps
}

func (a *App) manifestPrimitives(si mcpserver.Info) ([]management.Resource, []management.Prompt) {
	rs, ps := a.ListedPrimitives(si)
	var outR []management.Resource
	for _, r := range rs {
		outR = append(outR, management.Resource{URI: r.URI, URITemplate: r.URITemplate, Name: r.Name, MIMEType: r.MIMEType})
	}
	var outP []management.Prompt
	for _, p := range ps {
		mp := management.Prompt{Name: p.Name}
		for _, arg := range p.Arguments {
			mp.Arguments = append(mp.Arguments, management.PromptArgument{Name: arg.Name, Required: arg.Required})
		}
		outP = append(outP, mp)
	}
	return outR, outP
}
