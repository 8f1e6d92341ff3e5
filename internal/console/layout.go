package console

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"time"
)

//go:embed assets
var assets embed.FS

//go:embed templates/layout.html
var layoutText string

// layout is the frame every page renders into.
var layout = template.Must(template.New("layout").Funcs(FuncMap()).Parse(layoutText))

// FuncMap returns the functions every page template may use:
//
//	dur      a time.Duration, rounded for reading ("1.2ms")
//	since    the time since a time.Time ("3s ago")
//	bytes    a byte count ("1.5 KiB")
//	json     a value as indented JSON text (escaped by html/template)
//	pct      a ratio as a percentage ("12.5%")
func FuncMap() template.FuncMap {
	return template.FuncMap{
		"dur": func(d time.Duration) string {
			switch {
			case d == 0:
				return "0"
			case d < time.Microsecond:
				return d.String()
			case d < time.Millisecond:
				return d.Round(time.Microsecond).String()
			case d < time.Second:
				return d.Round(10 * time.Microsecond).String()
			default:
				return d.Round(time.Millisecond).String()
			}
		},
		"since": func(t time.Time) string {
			if t.IsZero() {
				return "never"
			}
			return time.Since(t).Round(time.Second).String() + " ago"
		},
		"bytes": func(n int64) string {
			const unit = 1024
			if n < unit {
				return fmt.Sprintf("%d B", n)
			}
			div, exp := int64(unit), 0
			for x := n / unit; x >= unit; x /= unit {
				div *= unit
				exp++
			}
			return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
		},
		"json": func(v any) string {
			b, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				return fmt.Sprintf("(not JSON: %v)", err)
			}
			return string(b)
		},
		"pct": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	}
}

// Page parses a page's body template with the console's functions; it panics
// on a syntax error (templates are compiled in, so a test catches it).
func PageTemplate(name, text string) *template.Template {
	return template.Must(template.New(name).Funcs(FuncMap()).Parse(text))
}

// mountAssets serves the embedded CSS and JS without authentication: they
// hold nothing about the application, and the sign-in page needs them.
func (m *Mux) mountAssets() {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err)
	}
	fileServer := http.StripPrefix(m.base+"/assets/", http.FileServer(http.FS(sub)))
	m.mux.Handle("GET "+m.base+"/assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		fileServer.ServeHTTP(w, r)
	}))
}
