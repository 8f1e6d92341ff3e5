package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/uri"
)

func init() {
	mcpSubcommands = append(mcpSubcommands, newMCPListCmd, newMCPServeCmd, newMCPInspectCmd)
}

func newMCPListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list FILE...",
		Short: "List the MCP servers of the files and the workflows they can expose",
		Long: `List loads the files (nothing is started) and prints each MCP server declared in
helix.mcp.servers, mcps: or an mcp-server:// trigger with its transport, address and
tools, then every workflow, tool, agent and pipeline that can be exposed as a tool.
Markers: [tool  ] tools: entries (with output schema), [agent ] agents,
[pipe  ] pipelines, [route ] workflows.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			a, cfg, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler)}, files...)
			if cfg != nil {
				printWarnings(cmd.ErrOrStderr(), cfg.Warnings)
			}
			if err != nil {
				return printConfigErrors(cmd.ErrOrStderr(), err)
			}
			servers, err := mcpServersOf(a)
			if err != nil {
				return configError(err)
			}
			for i := range servers {
				servers[i].Tools = a.ListedTools(servers[i])
				servers[i].Resources, servers[i].Prompts = a.ListedPrimitives(servers[i])
			}
			return printMCPList(cmd.OutOrStdout(), strings.Join(files, ", "), servers, a.Context())
		},
	}
}

// mcpServersOf lists the declared servers and those of mcp-server:// triggers.
func mcpServersOf(a *app.App) ([]mcpserver.Info, error) {
	comp := mcpserver.Of(a.Context())
	servers := comp.Servers()
	for _, wf := range a.Context().Workflows() {
		u, err := uri.Parse(wf.FromURI)
		if err != nil || u.Scheme != mcpserver.Scheme {
			continue
		}
		opts, err := mcpserver.OptionsFromURI(u)
		if err != nil {
			return nil, fmt.Errorf("workflow %s: %w", wf.ID, err)
		}
		info, err := comp.Describe(opts)
		var unknown *mcpserver.UnknownExposeError
		if err != nil && !errors.As(err, &unknown) {
			return nil, fmt.Errorf("workflow %s: %w", wf.ID, err)
		}
		servers = append(servers, info)
	}
	return servers, nil
}

// printMCPList prints the integration guide's §4A listing.
func printMCPList(w io.Writer, source string, servers []mcpserver.Info, hc *engine.Context) error {
	var b strings.Builder
	fmt.Fprintf(&b, "MCP Servers in %s:\n\n", source)
	if len(servers) == 0 {
		b.WriteString("  (none: add an mcps: entry, helix.mcp.servers or an mcp-server:// trigger)\n")
	} else {
		fmt.Fprintf(&b, "%-20s %-10s %-25s %s\n", "NAME", "TRANSPORT", "ADDRESS", "TOOLS")
		fmt.Fprintf(&b, "%-20s %-10s %-25s %s\n", "----", "---------", "-------", "-----")
		for _, s := range servers {
			addr := s.Addr
			if s.Transport == mcpserver.TransportStdio {
				addr = "stdin/stdout"
			}
			names := make([]string, len(s.Tools))
			for i, t := range s.Tools {
				names[i] = t.Name
			}
			tools := strings.Join(names, ", ")
			if tools == "" {
				tools = "(none)"
			}
			fmt.Fprintf(&b, "%-20s %-10s %-25s %s\n", s.Name, s.Transport, addr, tools)
			printPrimitives(&b, s)
		}
	}
	// Describe every exposable workflow as a server exposing everything would.
	all, err := mcpserver.New(hc).Describe(mcpserver.Options{ID: "list", Transport: mcpserver.TransportStdio})
	if err != nil {
		return configError(err)
	}
	fmt.Fprintf(&b, "\nAvailable workflows (%d):\n", len(all.Tools))
	for _, t := range all.Tools {
		fmt.Fprintf(&b, "  %-25s [%-6s] %s (%s)\n", t.WorkflowID, kindMarker(t.Kind), firstLine(t.Description), schemaSummary(t))
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func kindMarker(k engine.Kind) string {
	switch k {
	case engine.KindTool:
		return "tool"
	case engine.KindAgent:
		return "agent"
	case engine.KindPipeline:
		return "pipe"
	default:
		return "route"
	}
}

// schemaSummary says how many input properties (and output fields) a tool has.
func schemaSummary(t mcpserver.ToolInfo) string {
	in := propertyCount(t.InputSchema)
	var s string
	switch in {
	case -1:
		s = "any input"
	case 1:
		s = "1 param"
	default:
		s = fmt.Sprintf("%d params", in)
	}
	if t.OutputSchema != nil {
		switch out := propertyCount(t.OutputSchema); out {
		case -1:
			s += ", output: any"
		case 1:
			s += ", output: 1 field"
		default:
			s += fmt.Sprintf(", output: %d fields", out)
		}
	}
	return s
}

// propertyCount counts a schema's top-level properties; -1 when it declares none
// (any object is accepted).
func propertyCount(schema json.RawMessage) int {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || s.Properties == nil {
		return -1
	}
	return len(s.Properties)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

func newMCPServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve FILE...",
		Short: "Run the files with their MCP servers (same as helix run)",
		Long: `Serve is helix run: it starts every workflow and MCP server of the files and runs
until SIGINT or SIGTERM, or, for a stdio MCP server, until the client closes stdin.
With a stdio server nothing but MCP messages is written to stdout (logs go to stderr),
so an AI client can launch "helix mcp serve helix.yaml" as its subprocess.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error { return runFiles(cmd, files) },
	}
}

// printPrimitives adds the resources and prompts of a server (resources:,
// prompts:) under its line, when it has any.
func printPrimitives(b *strings.Builder, s mcpserver.Info) {
	if len(s.Resources) > 0 {
		names := make([]string, len(s.Resources))
		for i, r := range s.Resources {
			names[i] = r.URI + r.URITemplate
		}
		fmt.Fprintf(b, "%-20s resources: %s\n", "", strings.Join(names, ", "))
	}
	if len(s.Prompts) > 0 {
		names := make([]string, len(s.Prompts))
		for i, p := range s.Prompts {
			names[i] = p.Name
		}
		fmt.Fprintf(b, "%-20s prompts:   %s\n", "", strings.Join(names, ", "))
	}
}
