// Package oauth gives Helix's MCP client OAuth authorization on top of the go-sdk's
// auth and oauthex packages: the authorization code flow for people (helix mcp login,
// with a loopback redirect), a token store those logins live in, a handler that uses
// and refreshes a stored login, and the client credentials grant with the token
// endpoint found by discovery (for workflows).
package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/arvenza/helix/internal/redact"
)

// DirEnv overrides where logins are stored (tests, several profiles on one machine).
const DirEnv = "HELIX_MCP_TOKEN_DIR"

// maxEntryBytes bounds one stored login file: anything larger was not written by
// Helix.
const maxEntryBytes = 1 << 20

// DefaultDir is where logins are stored: $HELIX_MCP_TOKEN_DIR, else mcp-tokens under
// dataDir (helix.data_dir, or Helix's default data directory when "").
func DefaultDir(dataDir string) string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	return filepath.Join(dataDir, "mcp-tokens")
}

// Login is what one `helix mcp login` stored for a server: the tokens and what
// refreshing them, stepping up their scopes and revoking them need.
type Login struct {
	// Resource is the server's canonical URL (the key of the store).
	Resource string `json:"resource"`
	// ResourceMetadata is the protected resource metadata URL the server named in
	// its challenge, if any (logout finds the revocation endpoint through it).
	ResourceMetadata string `json:"resource_metadata,omitempty"`
	// Issuer is the authorization server (from the iss of the authorization
	// response when the server sent one, else the token endpoint's origin).
	Issuer string `json:"issuer,omitempty"`
	// TokenURL, AuthStyle, ClientID and ClientSecret are the client registration
	// (pre-registered, client ID metadata document or dynamic) the tokens belong to.
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	// Scopes are the scopes granted (or requested, when the token names none).
	Scopes []string `json:"scopes,omitempty"`
	// Token holds the access and refresh tokens and the expiry.
	Token *oauth2.Token `json:"token"`
	// Saved is when the entry was last written.
	Saved time.Time `json:"saved"`
}

// config returns the oauth2 config that refreshes l's tokens.
func (l *Login) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     l.ClientID,
		ClientSecret: l.ClientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: l.TokenURL, AuthStyle: l.AuthStyle},
		Scopes:       l.Scopes,
	}
}

// hideSecrets adds l's secrets to the process's redaction set, so that a server
// echoing one in an error does not show it to logs or callers.
func (l *Login) hideSecrets() {
	redact.AddSecret(l.ClientSecret)
	if l.Token != nil {
		redact.AddSecret(l.Token.AccessToken, l.Token.RefreshToken)
	}
}

// CanonicalResource returns the canonical form of an MCP server URL, the key of
// its login: lower-case scheme and host, no default port, no query or fragment,
// no trailing slash.
func CanonicalResource(raw string) (string, error) {
	lower := strings.ToLower(raw)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return "", fmt.Errorf("%q is not an http:// or https:// URL of an MCP server", raw)
	}
	scheme := strings.ToLower(u.Scheme)
	// The port the scheme implies (80, 443) is left out, as a URL may leave it out.
	defaultPort, _ := net.LookupPort("tcp", scheme)
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && p != strconv.Itoa(defaultPort) {
		host += ":" + p
	}
	return scheme + "://" + host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// Store keeps logins as JSON files, one per server, readable by the user only
// (files 0600 in a 0700 directory).
type Store struct {
	Dir string
}

// fileName is the entry's file: a hash of the key, so that no URL character ends
// up in a path.
func (s Store) fileName(resource string) string {
	sum := sha256.Sum256([]byte(resource))
	return filepath.Join(s.Dir, hex.EncodeToString(sum[:16])+".json")
}

// Load returns the login stored for the server URL, or nil when there is none.
func (s Store) Load(serverURL string) (*Login, error) {
	key, err := CanonicalResource(serverURL)
	if err != nil {
		return nil, err
	}
	path := s.fileName(key)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	data, err := readSmall(path)
	if err != nil {
		return nil, err
	}
	var l Login
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("token store: %s is not a Helix login (%v); delete it and run helix mcp login again", path, err)
	}
	if l.Resource != key || l.Token == nil {
		return nil, fmt.Errorf("token store: %s does not hold the login of %s; delete it and run helix mcp login again", path, key)
	}
	l.hideSecrets()
	return &l, nil
}

// Save writes l (its Resource canonicalised) atomically, with mode 0600 in a 0700
// directory.
func (s Store) Save(l *Login) error {
	key, err := CanonicalResource(l.Resource)
	if err != nil {
		return err
	}
	l.Resource = key
	l.Saved = time.Now().UTC()
	l.hideSecrets()
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	// MkdirAll keeps the mode of a directory that exists: a wider one would let
	// others list (or, worse, replace) the logins.
	if err := os.Chmod(s.Dir, 0o700); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.Dir, ".login-*")
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("token store: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("token store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.fileName(key)); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	return nil
}

// Delete removes the login of the server URL; deleting none is not an error.
func (s Store) Delete(serverURL string) error {
	key, err := CanonicalResource(serverURL)
	if err != nil {
		return err
	}
	if err := os.Remove(s.fileName(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("token store: %w", err)
	}
	return nil
}

// List returns the stored logins, sorted by server. Files that are not logins are
// reported in the error and skipped.
func (s Store) List() ([]*Login, error) {
	names, err := filepath.Glob(filepath.Join(s.Dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Login
	var errs []error
	for _, name := range names {
		data, err := readSmall(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var l Login
		if err := json.Unmarshal(data, &l); err != nil || l.Resource == "" {
			errs = append(errs, fmt.Errorf("token store: %s is not a Helix login", name))
			continue
		}
		out = append(out, &l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out, errors.Join(errs...)
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	defer f.Close()
	if err := checkPrivate(f, path); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxEntryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	if len(data) > maxEntryBytes {
		return nil, fmt.Errorf("token store: %s is larger than a login can be; delete it", path)
	}
	return data, nil
}

// checkPrivate refuses a login file that others may read: its tokens would no
// longer be the user's alone.
func checkPrivate(f *os.File, path string) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("token store: %s has mode %s, readable by others; run chmod 600 on it (or delete it and log in again)", path, st.Mode().Perm())
	}
	return nil
}
