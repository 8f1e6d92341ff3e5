package security

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Errors returned (wrapped) by [Stack.ToolAllowed]; test with errors.Is.
var (
	ErrToolBlocked       = errors.New("tool is blocked")
	ErrToolNotAllowed    = errors.New("tool is not in allowed_tools")
	ErrInsufficientScope = errors.New("token lacks a required scope")
)

// ToolError is the error of a refused tool, e.g. "tool admin-tool is blocked".
// The MCP server logs it; the client gets the answer of an unknown tool, so
// that nobody learns which tools a server hides.
type ToolError struct {
	Tool   string
	Reason error // ErrToolBlocked, ErrToolNotAllowed or ErrInsufficientScope
	msg    string
}

func (e *ToolError) Error() string { return e.msg }
func (e *ToolError) Unwrap() error { return e.Reason }

// SanitizeToolName maps a workflow id to its MCP tool name: '.', '-' and '/'
// become '_' (spec §8.1).
func SanitizeToolName(id string) string {
	return strings.NewReplacer(".", "_", "-", "_", "/", "_").Replace(id)
}

// toolFilter matches tools by sanitized name, so a list entry written as the
// workflow id ("admin-tool") and one written as the MCP name ("admin_tool")
// mean the same tool.
type toolFilter struct {
	allowed map[string]bool // empty: everything allowed
	blocked map[string]bool
	scopes  map[string][]string
}

func newToolFilter(allowed, blocked []string, oc *OAuthConfig) (toolFilter, error) {
	f := toolFilter{allowed: map[string]bool{}, blocked: map[string]bool{}, scopes: map[string][]string{}}
	var errs []error
	add := func(field string, list []string, into map[string]bool) {
		for i, t := range list {
			if strings.TrimSpace(t) == "" {
				errs = append(errs, fmt.Errorf("%s[%d] is empty", field, i))
				continue
			}
			into[SanitizeToolName(strings.TrimSpace(t))] = true
		}
	}
	add("allowed_tools", allowed, f.allowed)
	add("blocked_tools", blocked, f.blocked)
	if oc != nil {
		for tool, sc := range oc.Scopes {
			n := SanitizeToolName(strings.TrimSpace(tool)) // "*" stays "*"
			f.scopes[n] = append(f.scopes[n], sc...)
		}
	}
	return f, errors.Join(errs...)
}

// ToolAllowed reports whether toolName (raw workflow id or sanitized MCP
// name) may be listed and called. The MCP server calls it to hide tools from
// tools/list and to refuse tools/call (as an unknown tool; the error's message
// goes to the log). Blocked wins over allowed.
//
// When OAuth is configured and the tool requires scopes, ctx must carry the
// caller's token: the HTTP request context (the middleware stores the claims
// there) or a context built with [WithTokenInfo]. Without a token the tool is
// refused: scopes fail closed.
func (s *Stack) ToolAllowed(toolName string, ctx context.Context) error {
	n := SanitizeToolName(toolName)
	if s.tools.blocked[n] {
		return &ToolError{Tool: toolName, Reason: ErrToolBlocked, msg: fmt.Sprintf("tool %s is blocked", toolName)}
	}
	if len(s.tools.allowed) > 0 && !s.tools.allowed[n] {
		return &ToolError{Tool: toolName, Reason: ErrToolNotAllowed,
			msg: fmt.Sprintf("tool %s is not allowed on this server", toolName)}
	}
	// "*" lists scopes every tool needs, on top of the tool's own.
	need := append(slices.Clip(s.tools.scopes["*"]), s.tools.scopes[n]...)
	if s.oauth == nil || len(need) == 0 {
		return nil
	}
	var have []string
	if c := ClaimsFromContext(ctx); c != nil {
		have = c.Scopes
	} else if ti := auth.TokenInfoFromContext(ctx); ti != nil {
		have = ti.Scopes
	}
	var missing []string
	for _, sc := range need {
		if !slices.Contains(have, sc) {
			missing = append(missing, sc)
		}
	}
	if len(missing) > 0 {
		return &ToolError{Tool: toolName, Reason: ErrInsufficientScope,
			msg: fmt.Sprintf("tool %s requires scope %s", toolName, strings.Join(missing, " "))}
	}
	return nil
}
