package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
)

// mcpServerFlags say how helix mcp call, read and prompt reach one MCP server: a
// URL (the first argument) or a --stdio command, with headers, environment and a
// timeout, and how they print what it answers (--output).
type mcpServerFlags struct {
	stdio     string
	transport string
	headers   []string
	env       []string
	timeout   time.Duration
	output    string
	protocol  string
}

// register adds the flags that address the server; each command adds --output
// with its own help.
func (f *mcpServerFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.stdio, "stdio", "", "start this command and talk to it over stdio instead of connecting to a URL")
	fl.StringArrayVar(&f.env, "env", nil, "NAME=value added to the --stdio command's environment (repeatable)")
	fl.StringVar(&f.transport, "transport", mcpserver.TransportHTTP, "transport for URL: http (Streamable HTTP) or sse")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, `HTTP header "Name: value" sent with every request (repeatable)`)
	fl.DurationVar(&f.timeout, "timeout", mcpclient.DefaultCallTimeout, "limit for connecting and each request (0: none)")
	fl.StringVar(&f.protocol, "protocol-version", "", "pin the MCP protocol version ("+strings.Join(mcpclient.ProtocolVersions, ", ")+"); default: the newest the server speaks")
}

// config turns the flags and the leading URL argument (none with --stdio) into a
// connection config, and returns the arguments after it. usage is the error when
// a URL is missing.
func (f *mcpServerFlags) config(args []string, usage string) (mcpclient.Config, []string, error) {
	var cfg mcpclient.Config
	cfg.Timeout = f.timeout
	cfg.ProtocolVersion = f.protocol
	if f.timeout == 0 {
		cfg.Timeout = -1
	}
	if f.output != "text" && f.output != "json" {
		return cfg, nil, fmt.Errorf("--output %q: use text or json", f.output)
	}
	if f.stdio != "" {
		words, err := splitCommandLine(f.stdio)
		if err != nil {
			return cfg, nil, fmt.Errorf("--stdio: %w", err)
		}
		if len(words) == 0 {
			return cfg, nil, errors.New("--stdio: empty command")
		}
		if len(f.headers) > 0 {
			return cfg, nil, errors.New("--header applies to URLs, not --stdio servers")
		}
		cfg.Transport = mcpserver.TransportStdio
		cfg.Command, cfg.Args, cfg.Env = words[0], words[1:], f.env
		return cfg, args, nil
	}
	if len(f.env) > 0 {
		return cfg, nil, errors.New("--env applies to --stdio servers")
	}
	if len(args) == 0 {
		return cfg, nil, errors.New(usage)
	}
	endpoint, err := mcpEndpointURL(args[0], f.transport)
	if err != nil {
		return cfg, nil, err
	}
	cfg.Transport, cfg.Endpoint = f.transport, endpoint
	// host:port finds Streamable HTTP at /mcp, then /, as mcp://host:port/tool does.
	cfg.FindPath = f.transport == mcpserver.TransportHTTP && isHostPort(args[0])
	if cfg.Header, err = parseHeaders(f.headers); err != nil {
		return cfg, nil, err
	}
	if err := withStoredLogin(&cfg, os.Stderr); err != nil { // mcp_login.go
		return cfg, nil, err
	}
	return cfg, args[1:], nil
}
