package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/component/mcp/client/oauth"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
)

func init() {
	mcpSubcommands = append(mcpSubcommands, newMCPLoginCmd, newMCPLogoutCmd, newMCPLoginsCmd)
}

// clientSecretEnv passes a pre-registered client's secret without putting it on
// the command line (where ps shows it).
const clientSecretEnv = "HELIX_MCP_CLIENT_SECRET"

// mcpLoginFlags are the options of `helix mcp login`.
type mcpLoginFlags struct {
	clientID          string
	clientSecret      string
	clientMetadataURL string
	scopes            []string
	noBrowser         bool
	timeout           time.Duration
	list              bool
}

func newMCPLoginCmd() *cobra.Command {
	var f mcpLoginFlags
	cmd := &cobra.Command{
		Use:   "login URL",
		Short: "Log in to an MCP server (OAuth) and store the tokens for helix mcp and workflows",
		Long: `Login runs the OAuth authorization code flow (with PKCE) for the MCP server at URL:
it connects, and when the server asks for authorization it finds the authorization
server from the server's metadata, registers Helix (client ID metadata document,
pre-registered client, or dynamic registration, whichever the server offers and the
flags allow), prints the authorization URL on stderr and opens it with $BROWSER (a
command run with the URL as its argument) or, on a desktop, the system's browser.
The browser comes back to a listener on http://127.0.0.1:<random port>/callback.

The tokens, the client registration and the granted scopes are stored, readable by
you only, in $HELIX_MCP_TOKEN_DIR or .helix/mcp-tokens (under the current directory).
helix mcp call, inspect, read and prompt use them for URL, refresh them when they
expire, and run this flow again when the server asks for more (with a browser or a
terminal at hand). Workflows use them with auth: {type: oauth2, login: true}.

The client secret of a pre-registered client can come from $HELIX_MCP_CLIENT_SECRET
instead of --client-secret. --list shows the stored logins (never a token).`,
		Example: `  helix mcp login https://mcp.example.com/mcp
  helix mcp login https://mcp.example.com/mcp --client-id helix-cli --scope "files:read files:write"
  helix mcp login https://mcp.example.com/mcp --client-metadata-url https://helix.example.com/client.json
  BROWSER="curl -fsS -o /dev/null -L" helix mcp login http://127.0.0.1:3000/mcp
  helix mcp login --list`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.list {
				if len(args) > 0 {
					return configError(errors.New("--list takes no URL"))
				}
				return listLogins(cmd.OutOrStdout())
			}
			if len(args) != 1 {
				return configError(errors.New("usage: helix mcp login URL (or helix mcp login --list)"))
			}
			return runMCPLogin(cmd, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.clientID, "client-id", "", "client ID of a client registered with the authorization server beforehand")
	fl.StringVar(&f.clientSecret, "client-secret", "", "its secret, if it has one (or set $"+clientSecretEnv+")")
	fl.StringVar(&f.clientMetadataURL, "client-metadata-url", "", "client ID metadata document URL (an https URL), for servers that take such documents")
	fl.StringArrayVar(&f.scopes, "scope", nil, "scopes to ask for besides those the server names (repeatable, or space separated)")
	fl.BoolVar(&f.noBrowser, "no-browser", false, "only print the authorization URL; open it yourself")
	fl.DurationVar(&f.timeout, "timeout", oauth.DefaultLoginTimeout, "how long to wait for the browser to come back")
	fl.BoolVar(&f.list, "list", false, "list the servers with stored logins")
	return cmd
}

func newMCPLoginsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logins",
		Short: "List the MCP servers with a stored login (same as helix mcp login --list)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return listLogins(cmd.OutOrStdout()) },
	}
}

func newMCPLogoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logout URL",
		Short: "Delete the stored login of an MCP server and revoke its tokens",
		Long: `Logout deletes the tokens helix mcp login stored for the MCP server at URL and, when
the authorization server advertises a revocation endpoint, revokes them there (the
refresh token, then the access token). When the revocation fails the tokens are
deleted all the same and the command exits 1: they remain valid at the server until
they expire.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runMCPLogout(cmd, args[0]) },
	}
}

// loginStore is where logins live for the CLI.
func loginStore() oauth.Store { return oauth.Store{Dir: oauth.DefaultDir(config.DefaultDataDir)} }

// loginEndpoint turns a login command's URL into the endpoint and the other URLs
// a login for it may be stored under (host:port finds /mcp, then /, as helix mcp
// call does).
func loginEndpoint(raw string) (endpoint string, findPath bool, candidates []string, err error) {
	endpoint, err = mcpEndpointURL(raw, mcpserver.TransportHTTP)
	if err != nil {
		return "", false, nil, err
	}
	if isHostPort(raw) {
		return endpoint, true, []string{endpoint + "/mcp"}, nil
	}
	return endpoint, false, nil, nil
}

func runMCPLogin(cmd *cobra.Command, f mcpLoginFlags, raw string) error {
	endpoint, findPath, _, err := loginEndpoint(raw)
	if err != nil {
		return configError(err)
	}
	secret := f.clientSecret
	if secret == "" {
		secret = os.Getenv(clientSecretEnv)
	}
	if secret != "" && f.clientID == "" {
		return configError(errors.New("--client-secret (or $" + clientSecretEnv + ") needs --client-id"))
	}
	if f.timeout <= 0 {
		return configError(fmt.Errorf("--timeout %s: must be positive", f.timeout))
	}
	stderr := cmd.ErrOrStderr()
	store := loginStore()
	// A fresh login: the handler starts without the stored one (the point is to
	// replace it), so the server's 401 starts the flow.
	h, err := oauth.NewHandler(endpoint, oauth.LoginConfig{
		Store: store, Fresh: true, Interactive: true,
		ClientID: f.clientID, ClientSecret: secret, ClientMetadataURL: f.clientMetadataURL,
		Scopes: splitScopes(f.scopes), Out: stderr, Open: browserOpener(f.noBrowser), Timeout: f.timeout,
	})
	if err != nil {
		return configError(err)
	}
	logger, err := newLogger(cmd, "error")
	if err != nil {
		return err
	}
	conn, err := mcpclient.NewConn(mcpclient.Config{
		Transport: mcpserver.TransportHTTP, Endpoint: endpoint, FindPath: findPath,
		OAuth: h, Logger: logger, Stderr: stderr,
		Timeout: -1, // the browser wait has its own bound (--timeout)
	})
	if err != nil {
		return configError(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout+2*time.Minute)
	defer cancel()
	// Listing the tools is what most servers guard; one that lets initialize
	// through asks for authorization there.
	if _, err := conn.ListTools(ctx); err != nil {
		return runtimeError(safeError(err))
	}
	l := h.Login()
	if h.Authorizations() == 0 || l == nil {
		return runtimeError(fmt.Errorf("%s did not ask for authorization: there is nothing to log in to (no login stored)", endpoint))
	}
	scopes := strings.Join(l.Scopes, " ")
	if scopes == "" {
		scopes = "(none named)"
	}
	fmt.Fprintf(stderr, "Logged in to %s (authorization server %s, scopes %s).\nTokens stored in %s; helix mcp logout %s deletes and revokes them.\n",
		terminalSafe(l.Resource), terminalSafe(l.Issuer), terminalSafe(scopes), store.Dir, terminalSafe(l.Resource))
	return nil
}

func runMCPLogout(cmd *cobra.Command, raw string) error {
	endpoint, _, candidates, err := loginEndpoint(raw)
	if err != nil {
		return configError(err)
	}
	store := loginStore()
	var l *oauth.Login
	for _, u := range append([]string{endpoint}, candidates...) {
		if l, err = store.Load(u); err != nil {
			return runtimeError(err)
		}
		if l != nil {
			break
		}
	}
	out := cmd.ErrOrStderr()
	if l == nil {
		fmt.Fprintf(out, "No login stored for %s.\n", terminalSafe(endpoint))
		return nil
	}
	if err := store.Delete(l.Resource); err != nil {
		return runtimeError(err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
	defer cancel()
	revoked, rerr := oauth.Revoke(ctx, l, nil)
	if rerr != nil {
		return runtimeError(fmt.Errorf("deleted the login of %s, but revoking its tokens failed (they stay valid until they expire): %w", l.Resource, safeError(rerr)))
	}
	if revoked != "" {
		fmt.Fprintf(out, "Logged out of %s: tokens revoked at %s and deleted.\n", terminalSafe(l.Resource), terminalSafe(revoked))
	} else {
		fmt.Fprintf(out, "Logged out of %s: tokens deleted (the authorization server offers no revocation; they expire on their own).\n", terminalSafe(l.Resource))
	}
	return nil
}

func listLogins(w io.Writer) error {
	store := loginStore()
	logins, err := store.List()
	if len(logins) == 0 && err == nil {
		_, werr := fmt.Fprintf(w, "No stored logins (in %s).\n", store.Dir)
		return werr
	}
	fmt.Fprintf(w, "%-40s %-30s %-20s %-25s %s\n", "SERVER", "AUTHORIZATION SERVER", "SCOPES", "ACCESS TOKEN EXPIRES", "REFRESH")
	for _, l := range logins {
		expires := "never"
		refresh := "no"
		if l.Token != nil {
			if !l.Token.Expiry.IsZero() {
				expires = l.Token.Expiry.UTC().Format(time.RFC3339)
			}
			if l.Token.RefreshToken != "" {
				refresh = "yes"
			}
		}
		scopes := strings.Join(l.Scopes, " ")
		if scopes == "" {
			scopes = "-"
		}
		fmt.Fprintf(w, "%-40s %-30s %-20s %-25s %s\n", terminalSafe(l.Resource), terminalSafe(l.Issuer), terminalSafe(scopes), expires, refresh)
	}
	if err != nil {
		return runtimeError(err)
	}
	return nil
}

// splitScopes accepts --scope repeated or space/comma separated.
func splitScopes(list []string) []string {
	var out []string
	for _, s := range list {
		out = append(out, strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })...)
	}
	return out
}

// withStoredLogin makes cfg (a Streamable HTTP server) use the login stored for
// its URL, refreshing it as needed; when the server asks for authorization again,
// the flow runs when a person can answer it (a browser command, a desktop or a
// terminal), else the error names helix mcp login. A request that carries its own
// Authorization header (--header) is left alone.
func withStoredLogin(cfg *mcpclient.Config, stderr io.Writer) error {
	if cfg.Transport != mcpserver.TransportHTTP || cfg.Header.Get("Authorization") != "" {
		return nil
	}
	var candidates []string
	if cfg.FindPath {
		candidates = []string{cfg.Endpoint + "/mcp"}
	}
	h, err := oauth.NewHandler(cfg.Endpoint, oauth.LoginConfig{
		Store:       loginStore(),
		Interactive: canAskPerson(),
		Out:         stderr,
		Open:        browserOpener(false),
	}, candidates...)
	if err != nil {
		return err
	}
	cfg.OAuth = h
	return nil
}

// canAskPerson reports whether an authorization URL can reach someone: a browser
// command, a desktop, or a terminal to print it on.
func canAskPerson() bool {
	return os.Getenv("BROWSER") != "" || hasDesktop() || isTerminal(os.Stdin) && isTerminal(os.Stderr)
}

func hasDesktop() bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}

// browserOpener returns how to open an authorization URL: $BROWSER (a command,
// run with the URL as its last argument, or in place of %s), else the desktop's
// opener, else nothing (the URL is only printed). The command runs on its own,
// writing to the process's stderr (not the command's writer, which the login
// goes on writing to meanwhile); a failure is reported there too, and the URL
// stays on stderr to open by hand.
func browserOpener(disabled bool) func(context.Context, string) error {
	if disabled {
		return nil
	}
	var words []string
	if b := os.Getenv("BROWSER"); b != "" {
		w, err := splitCommandLine(b)
		if err != nil || len(w) == 0 {
			return func(context.Context, string) error { return fmt.Errorf("$BROWSER %q: %v", b, err) }
		}
		words = w
	} else if hasDesktop() {
		switch runtime.GOOS {
		case "darwin":
			words = []string{"open"}
		case "windows":
			words = []string{"rundll32", "url.dll,FileProtocolHandler"}
		default:
			words = []string{"xdg-open"}
		}
	} else {
		return nil
	}
	return func(_ context.Context, authURL string) error {
		args := append([]string(nil), words[1:]...)
		placed := false
		for i, a := range args {
			if strings.Contains(a, "%s") {
				args[i], placed = strings.ReplaceAll(a, "%s", authURL), true
			}
		}
		if !placed {
			args = append(args, authURL)
		}
		c := exec.Command(words[0], args...)
		c.Stdout, c.Stderr = io.Discard, os.Stderr
		if err := c.Start(); err != nil {
			return err
		}
		go func() {
			if err := c.Wait(); err != nil {
				fmt.Fprintf(os.Stderr, "helix: the browser command %s ended with %v\n", words[0], err)
			}
		}()
		return nil
	}
}
