package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
)

// gatewayAddFlags are the flags of helix gateway add.
type gatewayAddFlags struct {
	file      string
	server    string
	prefix    string
	headers   []string
	bearerEnv string
	transport string
	command   string
	timeout   time.Duration
}

func newGatewayCmd() *cobra.Command {
	gw := &cobra.Command{
		Use:   "gateway",
		Short: "Manage the MCP servers a Helix gateway fronts (upstreams:)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	gw.AddCommand(newGatewayAddCmd())
	return gw
}

func newGatewayAddCmd() *cobra.Command {
	var f gatewayAddFlags
	cmd := &cobra.Command{
		Use:   "add NAME (URL | --command 'COMMAND ARGS…')",
		Short: "Discover an MCP server and add it to the gateway's upstreams: in helix.yaml",
		Long: `Add connects to the MCP server at URL (an http:// or https:// URL of Streamable
HTTP, or SSE with --transport sse), or starts the --command over stdio, lists what
it offers, and adds it as upstream NAME to the gateway server of --file
(default helix.yaml): the entry named by --server, else the only MCP server entry
with upstreams:, else a new mcps: entry "gateway". The rest of the file is left
as it is, comments and all. The file is created when it does not exist.

--bearer-env VAR authenticates with the token in the environment variable VAR and
writes auth: { type: bearer, token: "${env:VAR}" }: the token itself is never
written. --header Name=value (or "Name: value") is sent while discovering and
written to headers:; a value may be ${env:VAR}, which is read for the discovery
and written as given. --prefix sets prefix: (default: NAME followed by a dot;
"" keeps the server's names).`,
		Example: `  helix gateway add github https://api.githubcopilot.com/mcp/ --bearer-env GITHUB_TOKEN
  helix gateway add everything --command 'npx -y @modelcontextprotocol/server-everything'
  helix gateway add search http://search.internal:3100/mcp --prefix "" --header X-Team=support`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGatewayAdd(cmd, f, cmd.Flags().Changed("prefix"), args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "helix.yaml", "configuration file to add the upstream to")
	fl.StringVar(&f.server, "server", "", "id of the MCP server entry to add it to")
	fl.StringVar(&f.prefix, "prefix", "", `prefix of the upstream's tool and prompt names (default "NAME."; "" keeps them)`)
	fl.StringArrayVarP(&f.headers, "header", "H", nil, "HTTP header Name=value sent to the upstream (repeatable)")
	fl.StringVar(&f.bearerEnv, "bearer-env", "", "environment variable holding the upstream's bearer token")
	fl.StringVar(&f.transport, "transport", "", "http (Streamable HTTP, the default for a URL) or sse")
	fl.StringVar(&f.command, "command", "", "start this command as a stdio upstream instead of connecting to a URL")
	fl.DurationVar(&f.timeout, "timeout", mcpclient.DefaultCallTimeout, "limit for connecting and each request")
	return cmd
}

// upstreamName is what an upstream id may be: it becomes the default prefix
// and a part of audit records and metrics.
var upstreamName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// envName is an environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// headerEnvRef is a ${env:NAME} reference (with an optional :-default) in a header value.
var headerEnvRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

func runGatewayAdd(cmd *cobra.Command, f gatewayAddFlags, prefixSet bool, args []string) error {
	name := args[0]
	if !upstreamName.MatchString(name) {
		return configError(fmt.Errorf("NAME %q: use a letter, then letters, digits, - or _ (at most 64), e.g. github", terminalSafe(name)))
	}
	item, conn, err := gatewayAddPlan(f, prefixSet, args)
	if err != nil {
		return configError(err)
	}

	// The file is read and the edit made in memory before the server is
	// contacted: a duplicate or a file it cannot edit is reported at once.
	data, err := os.ReadFile(f.file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return configError(err)
	}
	added, err := addUpstreamToFile(f.file, data, f.server, name, item)
	if err != nil {
		return configError(err)
	}

	found, err := discoverUpstream(cmd, conn)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "%s: %s\n", name, found)
	if err := writeFileKeepingMode(f.file, added.data); err != nil {
		return runtimeError(err)
	}
	fmt.Fprintf(out, "Added to %s in %s, line %d:\n", added.where, f.file, added.line)
	for _, l := range added.lines {
		fmt.Fprintln(out, terminalSafe(l))
	}
	return nil
}

// gatewayAddPlan checks the flags and returns the upstream's YAML lines (after
// its id) and the connection that discovers it.
func gatewayAddPlan(f gatewayAddFlags, prefixSet bool, args []string) ([]string, mcpclient.Config, error) {
	cfg := mcpclient.Config{Timeout: f.timeout}
	if f.timeout <= 0 {
		cfg.Timeout = -1
	}
	var item []string
	if f.command != "" {
		if len(args) > 1 {
			return nil, cfg, errors.New("give a URL or --command, not both")
		}
		if len(f.headers) > 0 || f.bearerEnv != "" || (f.transport != "" && f.transport != mcpserver.TransportStdio) {
			return nil, cfg, errors.New("--header, --bearer-env and --transport apply to a URL, not to a --command upstream")
		}
		words, err := splitCommandLine(f.command)
		if err != nil {
			return nil, cfg, fmt.Errorf("--command: %w", err)
		}
		if len(words) == 0 {
			return nil, cfg, errors.New("--command: empty command")
		}
		cfg.Transport, cfg.Command, cfg.Args = mcpserver.TransportStdio, words[0], words[1:]
		item = append(item, "command: "+yamlString(words[0]))
		if len(words) > 1 {
			item = append(item, "args:")
			for _, a := range words[1:] {
				item = append(item, "  - "+yamlString(a))
			}
		}
	} else {
		if len(args) < 2 {
			return nil, cfg, errors.New("usage: helix gateway add NAME URL (or NAME --command 'COMMAND ARGS…')")
		}
		transport := f.transport
		if transport == mcpserver.TransportStdio {
			return nil, cfg, errors.New("--transport stdio: give the command to start with --command instead of a URL")
		}
		if transport == "" {
			transport = mcpserver.TransportHTTP
		}
		raw := args[1]
		if !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") {
			return nil, cfg, fmt.Errorf("URL %q: give the server's full http:// or https:// URL, e.g. http://localhost:3000/mcp", terminalSafe(raw))
		}
		endpoint, err := mcpEndpointURL(raw, transport)
		if err != nil {
			return nil, cfg, err
		}
		cfg.Transport, cfg.Endpoint = transport, endpoint
		item = append(item, "url: "+yamlString(endpoint))
		if f.transport != "" && f.transport != mcpserver.TransportHTTP {
			item = append(item, "transport: "+yamlString(f.transport))
		}
		header, lines, err := gatewayHeaders(f.headers)
		if err != nil {
			return nil, cfg, err
		}
		item = append(item, lines...)
		if f.bearerEnv != "" {
			if !envName.MatchString(f.bearerEnv) {
				return nil, cfg, fmt.Errorf("--bearer-env %q: give the name of an environment variable, e.g. GITHUB_TOKEN", terminalSafe(f.bearerEnv))
			}
			token := os.Getenv(f.bearerEnv)
			if token == "" {
				return nil, cfg, fmt.Errorf("--bearer-env %s: the variable is not set (export %s=<token> first)", f.bearerEnv, f.bearerEnv)
			}
			if header == nil {
				header = http.Header{}
			}
			header.Set("Authorization", "Bearer "+token)
			item = append(item, fmt.Sprintf("auth: { type: bearer, token: %s }", quoted("${env:"+f.bearerEnv+"}")))
		}
		cfg.Header = header
	}
	if prefixSet {
		item = append(item, "prefix: "+quoted(f.prefix))
	}
	return item, cfg, nil
}

// gatewayHeaders parses --header Name=value (or "Name: value"): the headers to
// discover with (${env:VAR} read) and the headers: lines to write (as given).
func gatewayHeaders(list []string) (http.Header, []string, error) {
	if len(list) == 0 {
		return nil, nil, nil
	}
	h := http.Header{}
	lines := []string{"headers:"}
	for _, kv := range list {
		i := strings.IndexAny(kv, "=:")
		if i <= 0 {
			return nil, nil, fmt.Errorf(`--header %q: use Name=value`, terminalSafe(kv))
		}
		k, v := strings.TrimSpace(kv[:i]), strings.TrimSpace(kv[i+1:])
		if k == "" || strings.ContainsAny(k, " \t\"'") {
			return nil, nil, fmt.Errorf(`--header %q: use Name=value`, terminalSafe(kv))
		}
		if strings.EqualFold(k, "Authorization") && !headerEnvRef.MatchString(v) {
			return nil, nil, errors.New("--header Authorization would write the credential into the file: use --bearer-env VAR (or --header 'Authorization=Bearer ${env:VAR}')")
		}
		var missing []string
		resolved := headerEnvRef.ReplaceAllStringFunc(v, func(ref string) string {
			m := headerEnvRef.FindStringSubmatch(ref)
			if val, ok := os.LookupEnv(m[1]); ok {
				return val
			}
			if strings.Contains(ref, ":-") {
				return m[2]
			}
			missing = append(missing, m[1])
			return ""
		})
		if len(missing) > 0 {
			return nil, nil, fmt.Errorf("--header %s: environment variable %s is not set", k, strings.Join(missing, ", "))
		}
		h.Add(k, resolved)
		lines = append(lines, "  "+yamlString(k)+": "+yamlString(v))
	}
	return h, lines, nil
}

// quoted writes s double-quoted (a JSON string is a valid YAML one): prefixes
// are written quoted, so that "" and "gh." read back as written.
func quoted(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// discoverUpstream connects, initializes and lists the server, and says what
// it found: "12 tools, 3 prompts (protocol 2025-11-25)".
func discoverUpstream(cmd *cobra.Command, cfg mcpclient.Config) (string, error) {
	conn, err := openMCPConn(cmd, &cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	ctx := cmd.Context()
	l, err := listServer(ctx, conn)
	if err != nil {
		return "", runtimeError(safeError(explainDiscovery(withSSEHint(ctx, err, cfg), cfg)))
	}
	parts := []string{plural(len(l.Tools), "tool")}
	if l.Capabilities.Prompts != nil {
		parts = append(parts, plural(len(l.Prompts), "prompt"))
	}
	if l.Capabilities.Resources != nil {
		parts = append(parts, plural(len(l.Resources), "resource"))
		if len(l.ResourceTemplates) > 0 {
			parts = append(parts, plural(len(l.ResourceTemplates), "resource template"))
		}
	}
	return fmt.Sprintf("%s (protocol %s)", strings.Join(parts, ", "), terminalSafe(l.ProtocolVersion)), nil
}

// explainDiscovery says what to do about a failed discovery.
func explainDiscovery(err error, cfg mcpclient.Config) error {
	if cfg.Transport == mcpserver.TransportStdio {
		return fmt.Errorf("%w\nhint: check that %s starts an MCP server on stdin/stdout", err, filepath.Base(cfg.Command))
	}
	switch status := mcpclient.ConnectHTTPStatus(err); {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		if cfg.Header.Get("Authorization") != "" {
			return fmt.Errorf("%w\nhint: the server refused the token: check the variable --bearer-env names", err)
		}
		return fmt.Errorf("%w\nhint: the server wants credentials: put its token in an environment variable and add --bearer-env VAR", err)
	case status != 0:
		return fmt.Errorf("%w\nhint: %s answers HTTP %d but not as an MCP server: check the URL's path (often /mcp)", err, cfg.Endpoint, status)
	}
	return fmt.Errorf("%w\nhint: is the server running at %s?", err, cfg.Endpoint)
}

// writeFileKeepingMode replaces file with data through a temporary file in the
// same directory (a crash leaves the old file whole), keeping its permissions.
func writeFileKeepingMode(file string, data []byte) error {
	if target, err := filepath.EvalSymlinks(file); err == nil {
		file = target // a linked configuration stays linked
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(file); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, strings.NewReader(string(data))); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
