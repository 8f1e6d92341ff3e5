// Package redact keeps secrets out of the text that leaves Helix through an error:
// a caller's error reply (an MCP tool error, an http-server:// 500 body), a log
// record and a span's status or exception event (docs/security.md, "Secrets in
// errors, logs and spans").
//
// Two things are hidden:
//
//   - in every URL inside a text, the password of the user info (a user-only user
//     info, often a token, whole) and every query value become "***"
//     (https://api/x?appid=*** ), whatever the component that built the message;
//   - every value of the process's secret set becomes "[redacted]": values resolved
//     from ${env:…} into a secret position of the configuration, auth: secrets,
//     model headers and API keys, Slack tokens. An upstream that echoes a key in
//     its error body is then harmless too.
//
// The boundaries call [Text] (or wrap their logger with [Handler]); code deeper
// down may keep full details in its errors, which only ever reach those
// boundaries.
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces a URL's password and query values.
const Mask = "***"

// Replacement replaces a value of the secret set.
const Replacement = "[redacted]"

// Text returns s with the URLs in it masked ([URLsIn]) and the values of the
// process's secret set replaced ([Secrets]). It is what every boundary applies.
func Text(s string) string {
	return secrets.Replace(URLsIn(s))
}

// urlInText matches a URL inside free text: a scheme, "://", and everything up to
// a space, a quote or an angle bracket (net/http quotes the URL of a failed
// request: Get "http://…": dial tcp …).
var urlInText = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>`]+")

// URLsIn returns s with every URL in it masked by [URL]. Punctuation that ends a
// sentence or a clause right after a URL ("…?appid=k3y: connection refused") is
// not taken as part of the URL's last value.
func URLsIn(s string) string {
	if !strings.Contains(s, "://") {
		return s // the common case: no regexp run at all
	}
	return urlInText.ReplaceAllStringFunc(s, func(u string) string {
		body := strings.TrimRight(u, ".,;:!?)]}")
		return URL(body) + u[len(body):]
	})
}

// URL returns raw with the user info's password, or a user info without a
// password (a token), and every query value replaced by [Mask]:
// postgres://app:s3cret@db/x?sslkey=k → postgres://app:***@db/x?sslkey=***.
// Unlike url.URL.Redacted it needs no parseable URL (a message may hold a broken
// one, and a URL that does not parse is exactly what an error is about) and
// it hides query values too: an API key is often one (?appid=…).
func URL(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	start := i + len("://")
	authorityEnd := len(raw)
	if j := strings.IndexAny(raw[start:], "/?#"); j >= 0 {
		authorityEnd = start + j
	}
	var b strings.Builder
	b.Grow(len(raw))
	b.WriteString(raw[:start])
	authority := raw[start:authorityEnd]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if user, _, hasPassword := strings.Cut(authority[:at], ":"); hasPassword {
			b.WriteString(user + ":" + Mask)
		} else {
			b.WriteString(Mask)
		}
		authority = authority[at:]
	}
	b.WriteString(authority)
	rest := raw[authorityEnd:]
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		b.WriteString(rest)
		return b.String()
	}
	b.WriteString(rest[:q+1])
	query, fragment := rest[q+1:], ""
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, fragment = query[:h], query[h:]
	}
	b.WriteString(maskQuery(query))
	b.WriteString(fragment)
	return b.String()
}

// maskQuery replaces the value of every key=value pair of a query string.
func maskQuery(query string) string {
	pairs := strings.Split(query, "&")
	for i, kv := range pairs {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
			pairs[i] = k + "=" + Mask
		}
	}
	return strings.Join(pairs, "&")
}
