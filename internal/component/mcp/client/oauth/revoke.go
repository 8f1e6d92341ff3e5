package oauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// Revoke asks the authorization server of l to revoke its tokens (RFC 7009: the
// refresh token, which takes the access tokens made from it along, then the access
// token). It returns the revocation endpoint, or "" when the server's metadata
// advertises none (nothing to do: the tokens expire on their own).
func Revoke(ctx context.Context, l *Login, client *http.Client) (string, error) {
	if client == nil {
		client = NewHTTPClient(nil)
	}
	if l.Issuer == "" {
		return "", nil
	}
	asm, err := auth.GetAuthServerMetadata(ctx, l.Issuer, client)
	if err != nil {
		return "", fmt.Errorf("revoke: metadata of %s: %w", l.Issuer, err)
	}
	if asm == nil || asm.RevocationEndpoint == "" {
		return "", nil
	}
	endpoint := asm.RevocationEndpoint
	type tokenKind struct{ value, hint string }
	for _, t := range []tokenKind{{l.Token.RefreshToken, "refresh_token"}, {l.Token.AccessToken, "access_token"}} {
		if t.value == "" {
			continue
		}
		if err := revokeOne(ctx, client, endpoint, l, t.value, t.hint); err != nil {
			return endpoint, err
		}
	}
	return endpoint, nil
}

func revokeOne(ctx context.Context, client *http.Client, endpoint string, l *Login, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	basic := l.ClientSecret != "" && l.AuthStyle != oauth2.AuthStyleInParams
	if !basic {
		form.Set("client_id", l.ClientID)
		if l.ClientSecret != "" {
			form.Set("client_secret", l.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("revoke: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(l.ClientID), url.QueryEscape(l.ClientSecret))
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("revoke at %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	// RFC 7009: 200 also for a token the server did not know; 503 asks to retry.
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoke at %s: HTTP %d for the %s", endpoint, resp.StatusCode, strings.ReplaceAll(hint, "_", " "))
	}
	return nil
}
