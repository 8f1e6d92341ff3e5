package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/suggest"
)

func init() { mcpSubcommands = append(mcpSubcommands, newMCPReadCmd, newMCPPromptCmd) }

type mcpReadFlags struct {
	mcpServerFlags
	answers answerFlags // mcp_call_elicit.go
	out     string
}

func newMCPReadCmd() *cobra.Command {
	var f mcpReadFlags
	cmd := &cobra.Command{
		Use:   "read (URL | --stdio 'COMMAND ARGS…') URI",
		Short: "Read a resource of an MCP server and print it",
		Long: `Read connects to an MCP server as helix mcp call does (the same URL, --stdio,
--transport, --header, --env and --timeout) and reads the resource at URI
(resources/read): a resource's URI, or one a resource template matches.

Text contents are printed as they are. Binary contents (blobs) are summarized
(URI, type and size); --out FILE writes the decoded bytes to FILE, and --output json
prints the whole result (blobs in base64).

Exit status: 0 when the resource was read, 1 when the server refused (an unknown URI:
the message says which resources come close) or could not be reached, 2 for bad input.`,
		Example: `  helix mcp read localhost:3000 docs://readme
  helix mcp read localhost:3000 'orders://42' -o json
  helix mcp read localhost:3000 images://logo --out logo.png`,
		RunE: func(cmd *cobra.Command, args []string) error { return runMCPRead(cmd, f, args) },
	}
	fl := cmd.Flags()
	f.register(fl)
	f.answers.register(fl)
	fl.StringVarP(&f.output, "output", "o", "text", "output: text (the contents) or json (the whole result)")
	fl.StringVar(&f.out, "out", "", "write the contents' decoded bytes to this file instead of printing them")
	return cmd
}

func runMCPRead(cmd *cobra.Command, f mcpReadFlags, args []string) error {
	usage := "usage: helix mcp read URL URI (or --stdio 'COMMAND ARGS…' URI)"
	cfg, rest, err := f.config(args, usage)
	if err != nil {
		return configError(err)
	}
	if len(rest) != 1 {
		return configError(errors.New(usage))
	}
	if f.out != "" && f.output == "json" {
		return configError(errors.New("--out and --output json: choose one"))
	}
	uri := rest[0]
	if cfg.Answers, err = f.answers.answers(cmd.InOrStdin(), cmd.ErrOrStderr()); err != nil {
		return configError(err)
	}
	conn, err := openMCPConn(cmd, &cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx := cmd.Context()
	res, err := conn.ReadResource(ctx, uri)
	if err != nil {
		return runtimeError(safeError(explainUnknown(ctx, conn, err, "resource", uri, resourceURIs)))
	}
	out := cmd.OutOrStdout()
	switch {
	case f.output == "json":
		err = writeJSON(out, res)
	case f.out != "":
		err = writeContents(cmd.ErrOrStderr(), f.out, res.Contents)
	default:
		err = printContents(out, res.Contents)
	}
	if err != nil {
		return runtimeError(err)
	}
	return nil
}

// openMCPConn opens the connection of read and prompt, with their logger and the
// stdio server's stderr.
func openMCPConn(cmd *cobra.Command, cfg *mcpclient.Config) (*mcpclient.Conn, error) {
	// Connection problems are reported as the command's error; the client's own
	// warnings would say the same twice unless --log-level asks for them.
	logger, err := newLogger(cmd, "error")
	if err != nil {
		return nil, err
	}
	cfg.Logger = logger
	cfg.Stderr = &lockedWriter{w: cmd.ErrOrStderr()} // see lockedWriter
	conn, err := mcpclient.NewConn(*cfg)
	if err != nil {
		return nil, configError(err)
	}
	return conn, nil
}

// printContents prints text contents as they are and summarizes binary ones.
func printContents(w io.Writer, contents []*sdk.ResourceContents) error {
	var b strings.Builder
	for _, c := range contents {
		if c == nil {
			continue
		}
		if c.Blob != nil {
			fmt.Fprintf(&b, "%s: %s, %d bytes of binary data (use --out FILE to save it, or -o json)\n", c.URI, orUnknownType(c.MIMEType), len(c.Blob))
			continue
		}
		b.WriteString(withNewline(c.Text))
	}
	_, err := io.WriteString(w, terminalSafe(b.String()))
	return err
}

func orUnknownType(mimeType string) string {
	if mimeType == "" {
		return "no MIME type"
	}
	return mimeType
}

// writeContents writes the decoded bytes of the contents (text or blob) to file,
// one after the other, and says how many on stderr.
func writeContents(stderr io.Writer, file string, contents []*sdk.ResourceContents) error {
	var data []byte
	for _, c := range contents {
		if c == nil {
			continue
		}
		if c.Blob != nil {
			data = append(data, c.Blob...)
		} else {
			data = append(data, c.Text...)
		}
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	_, err := fmt.Fprintf(stderr, "wrote %d bytes to %s\n", len(data), file)
	return err
}

// explainUnknown adds to a server's refusal of name (a resource URI or a prompt
// name) the closest name the server lists, or the names it has when none is close.
// Other errors are returned as they are.
func explainUnknown(ctx context.Context, conn *mcpclient.Conn, err error, kind, name string, list func(context.Context, *mcpclient.Conn) ([]string, error)) error {
	var re *mcpclient.RequestError
	if !errors.As(err, &re) {
		return err
	}
	names, lerr := list(ctx, conn)
	if lerr != nil || len(names) == 0 {
		return err
	}
	for _, n := range names {
		if n == name {
			return err // it exists: the refusal is about something else
		}
	}
	if near := suggest.Closest(name, names); near != "" {
		return fmt.Errorf("%w\nhint: did you mean %q?", err, near)
	}
	const shown = 10
	more := ""
	if len(names) > shown {
		names, more = names[:shown], fmt.Sprintf(" (and %d more)", len(names)-shown)
	}
	return fmt.Errorf("%w\nhint: the server's %ss: %s%s", err, kind, strings.Join(names, ", "), more)
}

// resourceURIs lists the URIs of the server's resources.
func resourceURIs(ctx context.Context, conn *mcpclient.Conn) ([]string, error) {
	init, err := conn.InitializeResult(ctx)
	if err != nil || init.Capabilities == nil || init.Capabilities.Resources == nil {
		return nil, err
	}
	rs, err := conn.ListResources(ctx)
	if err != nil {
		return nil, err
	}
	uris := make([]string, len(rs))
	for i, r := range rs {
		uris[i] = r.URI
	}
	return uris, nil
}
