package durable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/arvenza/helix/internal/form"
)

// MaxCallbackBody bounds what a callback may POST (an await: body, an answer).
const MaxCallbackBody = 1 << 20

// CallbackHandler serves the callback route (mount it at [CallbackPath]): the
// link an approve:, elicit: or await: step hands out, signed and good for one
// resolution.
//
//   - GET shows what the run waits for and changes nothing (chat tools open
//     links to preview them): an HTML page with Approve/Reject buttons for a
//     person, JSON for a program (Accept: application/json).
//   - POST resolves: approve: takes decision=approve|reject (query, form or
//     JSON {"decision": …}); elicit: JSON {"action": "accept"|"decline",
//     "content": {…}}; await: any body, which becomes the run's body.
//
// Statuses: 200 resolved; 403 a link that was altered or made up; 410 a link
// used already (or whose run went on, ended or was cancelled); 400 a decision
// that does not fit; 413 a body over [MaxCallbackBody].
func (w *Waits) CallbackHandler() http.Handler {
	return http.HandlerFunc(w.serveCallback)
}

func (w *Waits) serveCallback(rw http.ResponseWriter, r *http.Request) {
	tok := r.URL.Path
	if i := strings.LastIndex(tok, "/"); i >= 0 {
		tok = tok[i+1:]
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		wt, err := w.Describe(r.Context(), tok)
		if err != nil {
			callbackError(rw, err)
			return
		}
		if wantsJSON(r) {
			writeJSON(rw, http.StatusOK, map[string]any{"status": "waiting", "wait": wt})
			return
		}
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = waitPage.Execute(rw, wt)
	case http.MethodPost:
		body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, MaxCallbackBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeJSON(rw, http.StatusRequestEntityTooLarge, map[string]any{"error": "the body is larger than the callback route takes (1 MiB)"})
				return
			}
			writeJSON(rw, http.StatusBadRequest, map[string]any{"error": "reading the body: " + err.Error()})
			return
		}
		wt, err := w.Describe(r.Context(), tok)
		if err != nil {
			callbackError(rw, err)
			return
		}
		res, err := resolutionOf(wt, r, body)
		if err != nil {
			writeJSON(rw, http.StatusBadRequest, map[string]any{"error": err.Error()})
			return
		}
		if _, err := w.ResolveToken(r.Context(), tok, res); err != nil {
			callbackError(rw, err)
			return
		}
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); wantsJSON(r) || ct != "application/x-www-form-urlencoded" {
			writeJSON(rw, http.StatusOK, map[string]any{"status": "resolved", "resolution": res.Kind})
			return
		}
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = donePage.Execute(rw, res.Kind)
	default:
		rw.Header().Set("Allow", "GET, HEAD, POST")
		writeJSON(rw, http.StatusMethodNotAllowed, map[string]any{"error": "use GET to see the wait, POST to resolve it"})
	}
}

// resolutionOf reads the resolution a POST brings for wait wt.
func resolutionOf(wt Wait, r *http.Request, body []byte) (Resolution, error) {
	by := "callback link"
	switch wt.Kind {
	case WaitApprove:
		d := r.URL.Query().Get("decision")
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		switch {
		case d != "":
		case ct == "application/x-www-form-urlencoded": // the page's buttons
			d, _ = parseQuery(body)
		case len(bytes.TrimSpace(body)) > 0:
			var v struct {
				Decision string `json:"decision"`
			}
			if err := json.Unmarshal(body, &v); err != nil {
				return Resolution{}, errors.New(`the body must be JSON {"decision": "approve" or "reject"}`)
			}
			d = v.Decision
		}
		switch strings.ToLower(strings.TrimSpace(d)) {
		case "approve", "approved", "yes":
			return Resolution{Kind: ResolvedApproved, By: by}, nil
		case "reject", "rejected", "no":
			return Resolution{Kind: ResolvedRejected, By: by}, nil
		}
		return Resolution{}, errors.New(`say decision=approve or decision=reject (query, form field, or JSON {"decision": …})`)
	case WaitElicit:
		var v struct {
			Action  string          `json:"action"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return Resolution{}, errors.New(`the body must be JSON {"action": "accept", "content": {…}} or {"action": "decline"}`)
		}
		switch v.Action {
		case "accept":
			if len(v.Content) == 0 {
				v.Content = json.RawMessage("{}")
			}
			var obj map[string]any
			if err := json.Unmarshal(v.Content, &obj); err != nil {
				return Resolution{}, errors.New("content must be a JSON object (the form's fields)")
			}
			if err := form.CheckRaw(wt.Schema, &obj); err != nil {
				// Refused here, the answer can be sent again; let through, it
				// would fail the run.
				return Resolution{}, fmt.Errorf("content does not match the form: %v", err)
			}
			return Resolution{Kind: ResolvedAnswered, Data: v.Content, By: by}, nil
		case "decline", "cancel":
			return Resolution{Kind: ResolvedDeclined, By: by}, nil
		}
		return Resolution{}, errors.New(`action must be "accept" or "decline"`)
	case WaitAwait:
		return Resolution{Kind: ResolvedReceived, Data: ReceivedData(body, r.Header.Get("Content-Type")), By: by}, nil
	}
	return Resolution{}, errors.New("a " + wt.Kind + " wait ends by its timer, not by a callback")
}

func parseQuery(body []byte) (string, error) {
	r, err := http.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := r.ParseForm(); err != nil {
		return "", err
	}
	return r.PostForm.Get("decision"), nil
}

// ReceivedData is the Data of a [ResolvedReceived] resolution: {"body": …,
// "content_type": …}, the body as JSON when it is JSON, else as a string.
func ReceivedData(body []byte, contentType string) json.RawMessage {
	var b any = string(body)
	if json.Valid(body) {
		b = json.RawMessage(body)
	}
	out, _ := json.Marshal(map[string]any{"body": b, "content_type": contentType})
	return out
}

func callbackError(rw http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	msg := "the callback could not be handled; try again"
	switch {
	case errors.Is(err, errForged):
		status, msg = http.StatusForbidden, err.Error()
	case errors.Is(err, ErrGone):
		status, msg = http.StatusGone, err.Error()
	case errors.Is(err, ErrWrongKind):
		status, msg = http.StatusBadRequest, err.Error()
	}
	writeJSON(rw, status, map[string]any{"error": msg})
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(v)
}

var waitPage = template.Must(template.New("wait").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>Helix: {{.Kind}}</title></head>
<body><p>{{if .Message}}{{.Message}}{{else}}A run waits for {{.Kind}}.{{end}}</p>
{{if eq .Kind "approve"}}<form method="post"><button name="decision" value="approve">Approve</button> <button name="decision" value="reject">Reject</button></form>
{{else}}<p>POST to this address to resolve the wait.</p>{{end}}
</body></html>
`))

var donePage = template.Must(template.New("done").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Helix</title></head><body><p>Done: {{.}}.</p></body></html>
`))
