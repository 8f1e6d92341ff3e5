package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
)

type mcpInspectFlags struct {
	mcpServerFlags
	schemas bool
}

func newMCPInspectCmd() *cobra.Command {
	var f mcpInspectFlags
	cmd := &cobra.Command{
		Use:   "inspect (ADDR | --stdio 'COMMAND ARGS…')",
		Short: "Connect to a running MCP server and list its tools, resources and prompts",
		Long: `Inspect connects to the MCP server at ADDR (host:port, or a full http:// or
https:// URL such as http://localhost:3000/mcp) with the official MCP Go SDK, over
Streamable HTTP (--transport http, the default) or SSE (--transport sse), or starts
the --stdio command, and prints what it offers: its name, version and protocol
version, then its tools, resources, resource templates and prompts (each section for
what the server declares). For host:port, Streamable HTTP tries /mcp, then the root
path; SSE uses /sse. When the server answers 404 and an SSE server answers at /sse,
the error says to add --transport sse. --header, --env and --timeout work as for
helix mcp call.

With --output json it prints one JSON object: endpoint, serverInfo, protocolVersion,
capabilities, instructions, and the tools, resources, resourceTemplates and prompts
arrays as the server gave them.`,
		Example: `  helix mcp inspect localhost:3000
  helix mcp inspect http://127.0.0.1:3001/mcp --schemas
  helix mcp inspect localhost:3000 -o json | jq '.prompts[].name'
  helix mcp inspect --stdio 'helix mcp serve helix.yaml'`,
		RunE: func(cmd *cobra.Command, args []string) error { return runMCPInspect(cmd, f, args) },
	}
	fl := cmd.Flags()
	f.register(fl)
	fl.BoolVar(&f.schemas, "schemas", false, "also print each tool's input (and output) schema")
	fl.StringVarP(&f.output, "output", "o", "text", "output: text (tables) or json (one object)")
	return cmd
}

// serverListing is what inspect found, in the JSON shape of --output json.
type serverListing struct {
	Endpoint          string                  `json:"endpoint"`
	ServerInfo        *sdk.Implementation     `json:"serverInfo"`
	ProtocolVersion   string                  `json:"protocolVersion"`
	Capabilities      *sdk.ServerCapabilities `json:"capabilities"`
	Instructions      string                  `json:"instructions,omitempty"`
	Tools             []*sdk.Tool             `json:"tools"`
	Resources         []*sdk.Resource         `json:"resources"`
	ResourceTemplates []*sdk.ResourceTemplate `json:"resourceTemplates"`
	Prompts           []*sdk.Prompt           `json:"prompts"`
}

func runMCPInspect(cmd *cobra.Command, f mcpInspectFlags, args []string) error {
	usage := "usage: helix mcp inspect ADDR (or --stdio 'COMMAND ARGS…')"
	cfg, rest, err := f.config(args, usage)
	if err != nil {
		return configError(err)
	}
	if len(rest) > 0 {
		return configError(errors.New(usage))
	}
	conn, err := openMCPConn(cmd, &cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx := cmd.Context()
	l, err := listServer(ctx, conn)
	if err != nil {
		return runtimeError(safeError(withSSEHint(ctx, err, cfg)))
	}
	if f.stdio != "" {
		l.Endpoint = "stdio: " + f.stdio
	}
	out := cmd.OutOrStdout()
	if f.output == "json" {
		if err := writeJSON(out, l); err != nil {
			return runtimeError(err)
		}
		return nil
	}
	// Names, descriptions and schemas are the server's text.
	if _, err := io.WriteString(out, formatListing(l, f.schemas)); err != nil {
		return runtimeError(err)
	}
	return nil
}

// listServer asks the server for everything it declares (a server without the
// resources capability is not asked for resources, and so on).
func listServer(ctx context.Context, conn *mcpclient.Conn) (*serverListing, error) {
	init, err := conn.InitializeResult(ctx)
	if err != nil {
		return nil, err
	}
	caps := init.Capabilities
	if caps == nil {
		caps = &sdk.ServerCapabilities{}
	}
	l := &serverListing{
		Endpoint: conn.Endpoint(), ServerInfo: init.ServerInfo, ProtocolVersion: init.ProtocolVersion,
		Capabilities: caps, Instructions: init.Instructions,
		Tools: []*sdk.Tool{}, Resources: []*sdk.Resource{}, ResourceTemplates: []*sdk.ResourceTemplate{}, Prompts: []*sdk.Prompt{},
	}
	if caps.Tools != nil {
		if l.Tools, err = conn.ListTools(ctx); err != nil {
			return nil, err
		}
	}
	if caps.Resources != nil {
		if l.Resources, err = conn.ListResources(ctx); err != nil {
			return nil, err
		}
		if l.ResourceTemplates, err = conn.ListResourceTemplates(ctx); err != nil {
			return nil, err
		}
	}
	if caps.Prompts != nil {
		if l.Prompts, err = conn.ListPrompts(ctx); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// formatListing prints the listing as tables, one section per capability the
// server declares (an empty one is just its count). Every cell is the server's
// text, made terminal-safe.
func formatListing(l *serverListing, schemas bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "MCP Server: %s\n", cell(l.Endpoint))
	if l.ServerInfo != nil {
		fmt.Fprintf(&b, "Server: %s %s (protocol %s)\n", cell(l.ServerInfo.Name), cell(l.ServerInfo.Version), cell(l.ProtocolVersion))
	}
	if l.Capabilities.Tools != nil || len(l.Tools) > 0 {
		tw := section(&b, "Tools", len(l.Tools), "TOOL", "DESCRIPTION")
		for _, t := range l.Tools {
			row(tw, t.Name, firstLine(t.Description))
			if schemas {
				tw.Flush()
				writeSchema(&b, "input", t.InputSchema)
				if t.OutputSchema != nil {
					writeSchema(&b, "output", t.OutputSchema)
				}
			}
		}
		tw.Flush()
	}
	if l.Capabilities.Resources != nil {
		tw := section(&b, "Resources", len(l.Resources), "URI", "NAME", "TYPE", "DESCRIPTION")
		for _, r := range l.Resources {
			row(tw, r.URI, r.Name, r.MIMEType, firstLine(r.Description))
		}
		tw.Flush()
		tw = section(&b, "Resource templates", len(l.ResourceTemplates), "URI TEMPLATE", "NAME", "TYPE", "DESCRIPTION")
		for _, r := range l.ResourceTemplates {
			row(tw, r.URITemplate, r.Name, r.MIMEType, firstLine(r.Description))
		}
		tw.Flush()
	}
	if l.Capabilities.Prompts != nil {
		tw := section(&b, "Prompts", len(l.Prompts), "PROMPT", "ARGUMENTS (* required)", "DESCRIPTION")
		for _, p := range l.Prompts {
			row(tw, p.Name, promptArguments(p), firstLine(p.Description))
		}
		tw.Flush()
	}
	return b.String()
}

// section starts a section of n items, with the table's header when n > 0; with
// no items the table (which gets no rows) writes nothing.
func section(b *strings.Builder, title string, n int, headers ...string) *tabwriter.Writer {
	fmt.Fprintf(b, "\n%s: %d\n", title, n)
	if n == 0 {
		return tabwriter.NewWriter(io.Discard, 0, 0, 2, ' ', 0)
	}
	b.WriteString("\n")
	return newTable(b, headers...)
}

// promptArguments lists a prompt's arguments, a * marking the required ones.
func promptArguments(p *sdk.Prompt) string {
	if len(p.Arguments) == 0 {
		return "-"
	}
	names := make([]string, len(p.Arguments))
	for i, a := range p.Arguments {
		names[i] = a.Name
		if a.Required {
			names[i] += "*"
		}
	}
	return strings.Join(names, ", ")
}

func newTable(w io.Writer, headers ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row(tw, headers...)
	under := make([]string, len(headers))
	for i, h := range headers {
		under[i] = strings.Repeat("-", len(h))
	}
	row(tw, under...)
	return tw
}

// row writes one table row; the last cell is not padded, and empty cells at the
// end are left out so that lines do not end in spaces.
func row(tw *tabwriter.Writer, cells ...string) {
	for len(cells) > 1 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	for i, c := range cells {
		if i > 0 {
			io.WriteString(tw, "\t")
		}
		io.WriteString(tw, cell(c))
	}
	io.WriteString(tw, "\n")
}

// cell makes server text fit one table cell: terminal-safe, no tabs or line breaks.
func cell(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(terminalSafe(s))
}

func writeSchema(b *strings.Builder, label string, schema any) {
	data, err := json.MarshalIndent(schema, "    ", "  ")
	if err != nil {
		data = []byte(err.Error())
	}
	fmt.Fprintf(b, "    %s: %s\n", label, terminalSafe(string(data)))
}
