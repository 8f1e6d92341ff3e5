package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

const consoleYAML = `
helix:
  console:
    auth:
      api_keys:
        - {key: viewer-key-123, name: vera}
        - {key: operator-key-456, name: otto, roles: [operator]}
workflows:
  - id: orders
    trigger: direct://orders
    steps:
      - set-body: ok
`

func get(t *testing.T, c *http.Client, u string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The console is served on the management listener: 401 without credentials
// (a sign-in page for a browser), the printed link signs in as the local
// operator with a cookie, API keys work as headers, and the overview lists
// the workflow with its counters.
func TestConsoleServedWithAuth(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, consoleYAML)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	link := a.ConsoleURL()
	u, err := url.Parse(link)
	if err != nil || u.Path != "/console/" || len(u.Query().Get("token")) != 64 {
		t.Fatalf("console URL %q", link)
	}
	base := "http://" + u.Host + "/console"
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, body := get(t, plain, base+"/"); resp.StatusCode != 401 || !strings.Contains(body, "401") {
		t.Fatalf("no credentials: %d %q", resp.StatusCode, body)
	}
	if resp, body := get(t, plain, base+"/", "Accept", "text/html"); resp.StatusCode != 401 || !strings.Contains(body, `name="key"`) {
		t.Fatalf("browser without credentials: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, plain, base+"/?token=wrong"); resp.StatusCode != 401 {
		t.Fatalf("wrong token: %d", resp.StatusCode)
	}
	// The link: a cookie, then the same URL without the token.
	resp, _ := get(t, plain, link)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("link: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	ck := resp.Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Path != "/console" {
		t.Fatalf("cookie %+v", ck)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	if _, body := get(t, browser, link); !strings.Contains(body, "orders") || !strings.Contains(body, "local (operator)") {
		t.Fatalf("overview after the link: %q", body)
	}
	if err := a.Context().Run(t.Context(), "orders", exchange.NewWithBody(exchange.InOut, "x")); err != nil {
		t.Fatal(err)
	}
	// API keys, as headers.
	resp, body := get(t, plain, base+"/overview.json", "Authorization", "Bearer viewer-key-123")
	if resp.StatusCode != 200 {
		t.Fatalf("viewer key: %d %q", resp.StatusCode, body)
	}
	var ov struct {
		Sections []struct {
			Kind string
			Rows []struct {
				ID, Total, P50 string
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &ov); err != nil || len(ov.Sections) == 0 || ov.Sections[0].Rows[0].ID != "orders" ||
		ov.Sections[0].Rows[0].Total != "1" || ov.Sections[0].Rows[0].P50 == "—" {
		t.Fatalf("overview.json: %v %s", err, body)
	}
	if resp, _ := get(t, plain, base+"/", "X-API-Key", "operator-key-456"); resp.StatusCode != 200 {
		t.Fatalf("operator key: %d", resp.StatusCode)
	}
	if resp, _ := get(t, plain, base+"/", "X-API-Key", "nope"); resp.StatusCode != 401 {
		t.Fatalf("wrong key: %d", resp.StatusCode)
	}
	// The sign-in form: a key pasted in → a cookie session as that key's user.
	jar2, _ := cookiejar.New(nil)
	form := &http.Client{Jar: jar2}
	req, _ := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(url.Values{"key": {"viewer-key-123"}, "next": {"/console/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+u.Host)
	r2, err := form.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := io.ReadAll(r2.Body)
	r2.Body.Close()
	if r2.StatusCode != 200 || !strings.Contains(string(b2), "vera (viewer)") {
		t.Fatalf("sign-in form: %d %q", r2.StatusCode, b2)
	}
}

// A non-loopback management address needs helix.console.auth; the error
// says where and what to add.
func TestConsoleNeedsAuthOffLoopback(t *testing.T) {
	t.Parallel()
	_, err := buildYAMLAt(t, "helix:\n  management:\n    addr: 0.0.0.0:0\n  console:\n    enabled: true\n", "")
	if err == nil || !strings.Contains(err.Error(), "helix.yaml:5:5") || !strings.Contains(err.Error(), "helix.console.auth.api_keys") {
		t.Fatalf("err = %v", err)
	}
	// Off elsewhere by default: no error, no console.
	a, err := buildYAMLAt(t, "helix:\n  management:\n    addr: 0.0.0.0:0\n", "")
	if err != nil || a.ConsoleURL() != "" {
		t.Fatalf("default off a non-loopback address: %v", err)
	}
	_, err = buildYAMLAt(t, "helix:\n  management:\n    enabled: false\n  console:\n    enabled: true\n", "")
	if err == nil || !strings.Contains(err.Error(), "management server, which is off") {
		t.Fatalf("console without management: %v", err)
	}
}

func buildYAMLAt(t *testing.T, yaml, mgmtAddr string) (*app.App, error) {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte(yaml))
	if err != nil {
		return nil, err
	}
	o := quiet
	o.ManagementAddr = mgmtAddr
	return app.Build(cfg, o)
}
