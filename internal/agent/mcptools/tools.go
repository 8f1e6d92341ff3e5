package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/tool"
)

// build turns the server's listing into compiled tools: selected by the patterns,
// and without the ones that cannot be offered to a model (an invalid or repeated
// name, an input schema that is not an object schema), each skipped with a warning
// so that one bad tool does not take the server's others away.
func (s *Server) build(listed []*sdk.Tool) []*tool.Tool {
	out := make([]*tool.Tool, 0, len(listed))
	seen := make(map[string]bool, len(listed))
	for _, st := range listed {
		if st == nil || !s.selected(st.Name) {
			continue
		}
		if seen[st.Name] {
			s.log.Warn("MCP server lists a tool twice; the first is kept", "server", s.name, "tool", st.Name)
			continue
		}
		t, err := s.compile(st)
		if err != nil {
			s.log.Warn("MCP server tool skipped", "server", s.name, "tool", st.Name, "error", err)
			continue
		}
		seen[st.Name] = true
		out = append(out, t)
	}
	return out
}

// compile makes the tool.Tool of one listed tool, compiled the way a Catalogue
// compiles what it registers (the only way the tool package offers). A tool whose
// output schema cannot be compiled is kept without it: the server checks its own
// results, and the model can still use the tool.
func (s *Server) compile(st *sdk.Tool) (*tool.Tool, error) {
	in, err := schemaJSON(st.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	outSchema, err := schemaJSON(st.OutputSchema)
	if err != nil {
		s.log.Warn("MCP server tool's output schema ignored", "server", s.name, "tool", st.Name, "error", err)
		outSchema = nil
	}
	t, err := s.register(st, in, outSchema)
	if err != nil && outSchema != nil {
		if t2, err2 := s.register(st, in, nil); err2 == nil {
			s.log.Warn("MCP server tool's output schema ignored", "server", s.name, "tool", st.Name, "error", err)
			return t2, nil
		}
	}
	return t, err
}

func (s *Server) register(st *sdk.Tool, in, outSchema json.RawMessage) (*tool.Tool, error) {
	t := &tool.Tool{
		ID:           st.Name,
		Name:         st.Name,
		Title:        st.Title,
		Description:  st.Description,
		InputSchema:  in,
		OutputSchema: outSchema,
		Annotations:  annotations(st.Annotations),
		Invoke:       s.invoker(st.Name),
	}
	if t.Title == "" && st.Annotations != nil {
		t.Title = st.Annotations.Title
	}
	if err := tool.NewCatalogue().Add(t); err != nil {
		return nil, err
	}
	if err := t.Problem(); err != nil {
		return nil, err
	}
	return t, nil
}

// schemaJSON passes a schema through as JSON (the SDK decodes it as any); nil stays
// nil.
func schemaJSON(schema any) (json.RawMessage, error) {
	switch v := schema.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	}
	data, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	if string(data) == "null" {
		return nil, nil
	}
	return data, nil
}

func annotations(a *sdk.ToolAnnotations) *tool.Annotations {
	if a == nil {
		return nil
	}
	return &tool.Annotations{ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
		IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
}

// invoker calls tool name on the server. The server's JSON-RPC refusal of the call
// (unknown tool, invalid arguments) is a result the model reads and can act on; not
// reaching the server is an error naming it. ctx flows to the connection, which
// passes the server's progress on to the caller's reporter.
func (s *Server) invoker(name string) tool.Func {
	return func(ctx context.Context, args map[string]any) (tool.Result, error) {
		res, err := s.connection().CallTool(ctx, name, args)
		if err != nil {
			var te *mcpclient.ToolError
			if errors.As(err, &te) {
				return tool.ErrorResult(s.redact.text(fmt.Sprintf("%s refused the call of tool %s: %s (JSON-RPC error %d)",
					s.name, name, te.Message, te.Code))), nil
			}
			return tool.Result{}, &redactedError{msg: s.name + ": " + s.redact.text(err.Error()), err: err}
		}
		return Result(res), nil
	}
}

// Result converts an MCP tool result into a tool.Result: text, image, audio and
// embedded resources part for part, a resource link as a text naming its URI (a
// model cannot follow it otherwise), structured content and isError as they are.
func Result(res *sdk.CallToolResult) tool.Result {
	if res == nil {
		return tool.Result{}
	}
	out := tool.Result{IsError: res.IsError, Structured: res.StructuredContent}
	if len(res.Content) > 0 {
		out.Content = make([]tool.Content, 0, len(res.Content))
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			out.Content = append(out.Content, tool.Text(c.Text))
		case *sdk.ImageContent:
			out.Content = append(out.Content, tool.Content{Type: tool.ContentImage, Data: c.Data, MIMEType: c.MIMEType})
		case *sdk.AudioContent:
			out.Content = append(out.Content, tool.Content{Type: tool.ContentAudio, Data: c.Data, MIMEType: c.MIMEType})
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil {
				part := tool.Content{Type: tool.ContentResource, URI: r.URI, MIMEType: r.MIMEType, Text: r.Text}
				if r.Blob != nil {
					part.Data, part.Text = r.Blob, ""
				}
				out.Content = append(out.Content, part)
			}
		case *sdk.ResourceLink:
			out.Content = append(out.Content, tool.Text(linkText(c)))
		case nil:
		default:
			out.Content = append(out.Content, tool.Text(fmt.Sprintf("[%T content omitted]", c)))
		}
	}
	return out
}

// linkText describes a resource link for a model: its URI, with its name, title,
// type, size and description when given.
func linkText(l *sdk.ResourceLink) string {
	var b strings.Builder
	b.WriteString("Resource link")
	if l.Title != "" {
		fmt.Fprintf(&b, " %q", l.Title)
	} else if l.Name != "" {
		fmt.Fprintf(&b, " %q", l.Name)
	}
	b.WriteString(": ")
	b.WriteString(l.URI)
	var meta []string
	if l.MIMEType != "" {
		meta = append(meta, l.MIMEType)
	}
	if l.Size != nil {
		meta = append(meta, fmt.Sprintf("%d bytes", *l.Size))
	}
	if len(meta) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(meta, ", "))
	}
	if l.Description != "" {
		b.WriteString(" - ")
		b.WriteString(l.Description)
	}
	return b.String()
}
