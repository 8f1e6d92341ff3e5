package oauth

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// maxWorkloadToken bounds a workload token file: a JWT of a few kilobytes, never
// more than this.
const maxWorkloadToken = 64 << 10

// WorkloadToken is workload identity federation: the workload holds a JWT issued by
// the platform it runs on (a Kubernetes service account token, a cloud's identity
// token, a CI job's token), and the authorization server, which trusts that
// issuer, takes it as the JWT bearer grant's assertion in place of a client secret.
type WorkloadToken struct {
	// Token is the JWT itself, or File the file that holds it; a file is read
	// again for every token request, since platforms rotate it in place.
	Token string
	File  string
}

// read returns the current token. Errors name the file, never the token.
func (w *WorkloadToken) read() (string, error) {
	if w.File == "" {
		if w.Token == "" {
			return "", errors.New("oauth2 workload identity: the workload token is empty")
		}
		return w.Token, nil
	}
	f, err := os.Open(w.File)
	if err != nil {
		return "", fmt.Errorf("oauth2 workload identity: %w", err)
	}
	defer f.Close()
	buf := make([]byte, maxWorkloadToken+1)
	n, _ := f.Read(buf)
	if n > maxWorkloadToken {
		return "", fmt.Errorf("oauth2 workload identity: %s is larger than %d KiB: not a token", w.File, maxWorkloadToken>>10)
	}
	tok := strings.TrimSpace(string(buf[:n]))
	if tok == "" {
		return "", fmt.Errorf("oauth2 workload identity: %s is empty", w.File)
	}
	return tok, nil
}
