package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/report"
)

func init() { mcpSubcommands = append(mcpSubcommands, newMCPCallCmd) }

// mcpCallFlags are the options of `helix mcp call`.
type mcpCallFlags struct {
	mcpServerFlags
	jsonArgs  string
	serverLog string
	list      bool
	answers   answerFlags // mcp_call_elicit.go
}

func newMCPCallCmd() *cobra.Command {
	var f mcpCallFlags
	cmd := &cobra.Command{
		Use:   "call (URL | --stdio 'COMMAND ARGS…') TOOL [key=value…]",
		Short: "Call a tool on an MCP server and print its result",
		Long: `Call connects to an MCP server as Helix's mcp:// component does, calls one tool and
prints the result: its text (the same body an mcp:// target produces), or with
--output json the whole tools/call result.

URL is host:port or a full http(s):// URL. With --transport http (the default) a
full URL is the Streamable HTTP endpoint as given, and host:port is looked for at
http://host:port/mcp, then http://host:port/; with --transport sse, host:port means
http://host:port/sse. When the server answers 404 and an SSE server answers at /sse,
the error says to add --transport sse. When --timeout passes, the server is sent
notifications/cancelled before the command exits. With --stdio the server is a
command started for the call (quote it as one argument), and TOOL is the first
argument.

Arguments are key=value pairs; a value is JSON when it parses as JSON (a=2 is a number,
b=true a boolean, c='{"x":1}' an object), else a string. --json gives them as one JSON
object; key=value pairs are added to it.

When the server asks for a form (elicitation), a terminal is asked field by field;
otherwise, and with --no-input, the form is answered with the --elicit key=value
values and its defaults, and declined when a required field has no value. Sampling
requests are refused.

Exit status: 0 when the tool succeeded, 1 when it returned an error (the message goes
to stderr) or the server could not be reached, 2 for bad input.`,
		Example: `  helix mcp call localhost:3000 greet name=Ada
  helix mcp call http://127.0.0.1:3001/mcp get-sum a=2 b=40
  helix mcp call localhost:3002 echo message=hi --transport sse
  helix mcp call --stdio 'npx -y @modelcontextprotocol/server-everything' echo --json '{"message":"hi"}'
  helix mcp call localhost:3000 --list`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMCPCall(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	f.register(fl)
	fl.StringVar(&f.jsonArgs, "json", "", "tool arguments as a JSON object")
	fl.StringVarP(&f.output, "output", "o", "text", "output: text (the result's text) or json (the whole result)")
	fl.StringVar(&f.serverLog, "server-log", "info", "show the server's log messages at or above this level (debug … emergency), or none")
	fl.BoolVar(&f.list, "list", false, "list the server's tools instead of calling one")
	f.answers.register(fl)
	return cmd
}

func runMCPCall(cmd *cobra.Command, f mcpCallFlags, args []string) error {
	cfg, tool, kv, err := mcpCallConfig(f, args)
	if err != nil {
		return configError(err)
	}
	logLevel, err := serverLogLevel(f.serverLog)
	if err != nil {
		return configError(err)
	}
	var arguments map[string]any
	if !f.list {
		if arguments, err = toolArguments(f.jsonArgs, kv); err != nil {
			return configError(err)
		}
	}
	// Connection problems are reported as the command's error; the client's own
	// warnings would say the same twice unless --log-level asks for them.
	logger, err := newLogger(cmd, "error")
	if err != nil {
		return err
	}
	cfg.Logger = logger
	stderr := &lockedWriter{w: cmd.ErrOrStderr()}
	cfg.Stderr = stderr
	if cfg.Answers, err = f.answers.answers(cmd.InOrStdin(), stderr); err != nil {
		return configError(err)
	}
	// Progress and log messages go to stderr as they arrive; stdout keeps the result.
	notes := &notificationPrinter{w: stderr}
	defer notes.stop()
	if logLevel != "" {
		cfg.LogLevel, cfg.OnLog = logLevel, notes.log
	}
	conn, err := mcpclient.NewConn(cfg)
	if err != nil {
		return configError(err)
	}
	defer conn.Close()
	// A reporter that wants progress makes the call send a progress token.
	ctx := report.WithReporter(cmd.Context(), report.Func{OnProgress: notes.progress})
	out := cmd.OutOrStdout()

	if f.list {
		tools, err := conn.ListTools(ctx)
		if err != nil {
			return runtimeError(safeError(withSSEHint(ctx, err, cfg)))
		}
		return printTools(out, tools, f.output)
	}

	res, err := conn.CallTool(ctx, tool, arguments)
	var te *mcpclient.ToolError
	if errors.As(err, &te) {
		fmt.Fprintf(cmd.ErrOrStderr(), "helix: tool %s failed: %s\n", terminalSafe(tool), terminalSafe(te.Message))
		return reported{code: ExitRuntime}
	}
	if err != nil {
		return runtimeError(safeError(withSSEHint(ctx, err, cfg)))
	}
	text, err := mcpclient.BodyFromResult(res)
	if err != nil {
		return runtimeError(safeError(err))
	}
	if f.output == "json" {
		if err := writeJSON(out, res); err != nil {
			return runtimeError(err)
		}
	} else if !res.IsError {
		if _, err := io.WriteString(out, withNewline(terminalSafe(text))); err != nil {
			return runtimeError(err)
		}
	}
	if res.IsError {
		if text == "" {
			text = mcpclient.MsgToolErrorNoText
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "helix: tool %s returned an error: %s\n", terminalSafe(tool), terminalSafe(text))
		return reported{code: ExitRuntime}
	}
	return nil
}

// mcpCallConfig turns the flags and positional arguments into a connection config,
// the tool name and the key=value arguments.
func mcpCallConfig(f mcpCallFlags, args []string) (mcpclient.Config, string, []string, error) {
	usage := "usage: helix mcp call URL TOOL [key=value…] (or URL --list)"
	if f.stdio != "" {
		usage = "usage: helix mcp call --stdio 'COMMAND ARGS…' TOOL [key=value…] (or --list instead of TOOL)"
	}
	cfg, args, err := f.config(args, usage)
	if err != nil {
		return cfg, "", nil, err
	}
	tool := ""
	if !f.list {
		if len(args) == 0 {
			return cfg, "", nil, errors.New(usage)
		}
		tool, args = args[0], args[1:]
	} else if len(args) > 0 {
		return cfg, "", nil, fmt.Errorf("--list takes no tool or arguments, got %q", args)
	}
	return cfg, tool, args, nil
}

// isHostPort reports whether an address is a bare host:port (no scheme, no path).
func isHostPort(raw string) bool {
	return !strings.Contains(raw, "://") && !strings.Contains(raw, "/")
}

// sseHintProbeTimeout bounds the GET that checks whether /sse answers.
const sseHintProbeTimeout = 5 * time.Second

// withSSEHint adds, to a Streamable HTTP connect that the server answered with 404,
// the flag to use when an SSE server answers at /sse of the same host: a server
// speaking only the 2024-11-05 SSE transport is a common reason for the 404.
func withSSEHint(ctx context.Context, err error, cfg mcpclient.Config) error {
	if cfg.Transport != mcpserver.TransportHTTP || mcpclient.ConnectHTTPStatus(err) != http.StatusNotFound {
		return err
	}
	u, perr := url.Parse(cfg.Endpoint)
	if perr != nil || u.Host == "" {
		return err
	}
	sseURL := u.Scheme + "://" + u.Host + "/sse"
	if !answersSSE(ctx, sseURL, cfg.Header) {
		return err
	}
	return fmt.Errorf("%w\nhint: %s answers as an MCP SSE server: add --transport sse", err, sseURL)
}

// answersSSE reports whether a GET of u opens an event stream (the SSE transport's
// endpoint). The stream is closed right away.
func answersSSE(ctx context.Context, u string, header http.Header) bool {
	ctx, cancel := context.WithTimeout(ctx, sseHintProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "text/event-stream")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return resp.StatusCode == http.StatusOK && mt == "text/event-stream"
}

// mcpEndpointURL turns URL or host:port into the endpoint, following the mcp:// URI
// rules: a bare host:port is http://host:port for Streamable HTTP (where the client
// looks for the server at /mcp, then /) and http://host:port/sse for SSE.
func mcpEndpointURL(raw, transport string) (string, error) {
	switch transport {
	case mcpserver.TransportHTTP, mcpserver.TransportSSE:
	default:
		return "", fmt.Errorf("--transport %q: use http or sse (or --stdio for a command)", transport)
	}
	if strings.HasPrefix(raw, "http://") || strings.HasPrefix(raw, "https://") {
		return raw, nil
	}
	if strings.Contains(raw, "://") {
		return "", fmt.Errorf("URL %q: use host:port or an http:// or https:// URL", raw)
	}
	if raw == "" || strings.HasPrefix(raw, "/") {
		return "", fmt.Errorf("URL %q: use host:port or an http:// or https:// URL", raw)
	}
	endpoint := "http://" + raw
	if transport == mcpserver.TransportSSE && !strings.Contains(raw, "/") {
		endpoint += "/sse"
	}
	return endpoint, nil
}

func parseHeaders(list []string) (http.Header, error) {
	if len(list) == 0 {
		return nil, nil
	}
	h := http.Header{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf(`--header %q: use "Name: value"`, kv)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h, nil
}

// toolArguments merges --json and key=value pairs (pairs win).
func toolArguments(jsonArgs string, pairs []string) (map[string]any, error) {
	args := map[string]any{}
	if strings.TrimSpace(jsonArgs) != "" {
		if err := json.Unmarshal([]byte(jsonArgs), &args); err != nil || args == nil {
			return nil, fmt.Errorf("--json must be a JSON object such as '{\"message\":\"hi\"}': %v", err)
		}
	}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q: use key=value", kv)
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			val = v
		}
		args[k] = val
	}
	return args, nil
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

func printTools(w io.Writer, tools []*sdk.Tool, output string) error {
	if output == "json" {
		if err := writeJSON(w, map[string]any{"tools": tools}); err != nil {
			return runtimeError(err)
		}
		return nil
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	for _, t := range tools {
		desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
		if _, err := fmt.Fprintf(w, "%-28s %s\n", terminalSafe(t.Name), terminalSafe(desc)); err != nil {
			return runtimeError(err)
		}
	}
	return nil
}

// splitCommandLine splits a command line into words the way a POSIX shell would for
// plain words, single and double quotes and backslash escapes (no expansion of
// variables or globs: the command is not run through a shell).
func splitCommandLine(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if escaped {
		return nil, fmt.Errorf("trailing backslash in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
