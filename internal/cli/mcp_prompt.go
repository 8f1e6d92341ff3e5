package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
)

type mcpPromptFlags struct {
	mcpServerFlags
	answers  answerFlags // mcp_call_elicit.go
	jsonArgs string
}

func newMCPPromptCmd() *cobra.Command {
	var f mcpPromptFlags
	cmd := &cobra.Command{
		Use:   "prompt (URL | --stdio 'COMMAND ARGS…') NAME [key=value…]",
		Short: "Get a prompt of an MCP server and print its messages",
		Long: `Prompt connects to an MCP server as helix mcp call does (the same URL, --stdio,
--transport, --header, --env and --timeout), gets prompt NAME with the arguments
given (prompts/get) and prints its messages, one "role: text" each. Images and audio
are summarized ([image image/png, 70 bytes]); an embedded resource shows its URI,
then its text. --output json prints the whole result.

Arguments are key=value pairs; prompt arguments are strings, so the value is taken
as it is written. --json gives them as one JSON object of strings; key=value pairs
are added to it.

Exit status: 0 when the prompt was got, 1 when the server refused (an unknown prompt:
the message says which prompt comes close; a missing argument) or could not be
reached, 2 for bad input.`,
		Example: `  helix mcp prompt localhost:3000 review code='func main() {}'
  helix mcp prompt localhost:3000 summarize --json '{"topic":"billing"}' -o json`,
		RunE: func(cmd *cobra.Command, args []string) error { return runMCPPrompt(cmd, f, args) },
	}
	fl := cmd.Flags()
	f.register(fl)
	f.answers.register(fl)
	fl.StringVar(&f.jsonArgs, "json", "", "prompt arguments as a JSON object of strings")
	fl.StringVarP(&f.output, "output", "o", "text", "output: text (the messages) or json (the whole result)")
	return cmd
}

func runMCPPrompt(cmd *cobra.Command, f mcpPromptFlags, args []string) error {
	usage := "usage: helix mcp prompt URL NAME [key=value…] (or --stdio 'COMMAND ARGS…' NAME [key=value…])"
	cfg, rest, err := f.config(args, usage)
	if err != nil {
		return configError(err)
	}
	if len(rest) == 0 {
		return configError(errors.New(usage))
	}
	name := rest[0]
	arguments, err := promptArgs(f.jsonArgs, rest[1:])
	if err != nil {
		return configError(err)
	}
	if cfg.Answers, err = f.answers.answers(cmd.InOrStdin(), cmd.ErrOrStderr()); err != nil {
		return configError(err)
	}
	conn, err := openMCPConn(cmd, &cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx := cmd.Context()
	res, err := conn.GetPrompt(ctx, name, arguments)
	if err != nil {
		return runtimeError(safeError(explainUnknown(ctx, conn, err, "prompt", name, promptNames)))
	}
	out := cmd.OutOrStdout()
	if f.output == "json" {
		err = writeJSON(out, res)
	} else {
		_, err = io.WriteString(out, terminalSafe(formatMessages(res.Messages)))
	}
	if err != nil {
		return runtimeError(err)
	}
	return nil
}

// promptArgs merges --json (an object of strings) and key=value pairs (pairs
// win; the value is the text after the first =).
func promptArgs(jsonArgs string, pairs []string) (map[string]string, error) {
	args := map[string]string{}
	if strings.TrimSpace(jsonArgs) != "" {
		var raw map[string]any
		if err := json.Unmarshal([]byte(jsonArgs), &raw); err != nil || raw == nil {
			return nil, fmt.Errorf(`--json must be a JSON object of strings such as '{"topic":"billing"}': %v`, err)
		}
		for k, v := range raw {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf(`--json: prompt arguments are strings, %q is not (write "%v")`, k, v)
			}
			args[k] = s
		}
	}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q: use key=value", kv)
		}
		args[k] = v
	}
	return args, nil
}

// formatMessages prints each message as "role: content".
func formatMessages(msgs []*sdk.PromptMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		if m == nil {
			continue
		}
		b.WriteString(withNewline(string(m.Role) + ": " + contentText(m.Content)))
	}
	return b.String()
}

// contentText shows one content part: text as it is, media as a summary, an
// embedded resource as its URI followed by its text.
func contentText(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes]", orUnknownType(c.MIMEType), len(c.Data))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes]", orUnknownType(c.MIMEType), len(c.Data))
	case *sdk.ResourceLink:
		return fmt.Sprintf("[resource link %s]", c.URI)
	case *sdk.EmbeddedResource:
		r := c.Resource
		switch {
		case r == nil:
			return "[resource]"
		case r.Blob != nil:
			return fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, orUnknownType(r.MIMEType), len(r.Blob))
		default:
			return fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)
		}
	case nil:
		return ""
	default:
		data, err := json.Marshal(c)
		if err != nil {
			return fmt.Sprintf("[%T]", c)
		}
		return string(unescapeHTML(data))
	}
}

// promptNames lists the names of the server's prompts.
func promptNames(ctx context.Context, conn *mcpclient.Conn) ([]string, error) {
	init, err := conn.InitializeResult(ctx)
	if err != nil || init.Capabilities == nil || init.Capabilities.Prompts == nil {
		return nil, err
	}
	ps, err := conn.ListPrompts(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names, nil
}
