package console

import (
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
)

//go:embed templates/signin.html
var signInText string

// signIn is the page a browser gets with a 401: a key field, and where the
// one-time link comes from.
var signIn = template.Must(template.New("signin").Parse(signInText))

type signInData struct {
	Base, Next, Error string
}

// wantsHTML reports whether the request is a browser's page load.
func wantsHTML(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// refuse answers an unauthenticated request: 429 over the failure limit, else
// 401 — a sign-in page for a browser, a line of text for anything else.
func (m *Mux) refuse(w http.ResponseWriter, r *http.Request, err error) bool {
	var lo *LockedOutError
	if errors.As(err, &lo) {
		tooMany(w, lo.Wait)
		return true
	}
	if !wantsHTML(r) {
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="helix-console"`)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	if e := signIn.Execute(w, signInData{Base: m.base, Next: r.URL.RequestURI(), Error: errorText(err)}); e != nil {
		m.log.Error("console: rendering the sign-in page", "error", e)
	}
	return true
}

func errorText(err error) string {
	if errors.Is(err, errNoCredentials) {
		return ""
	}
	return fmt.Sprint(err)
}
