package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/arvenza/helix/internal/component/mcp/transport"
)

// RawToolCaller is implemented by an Extension that answers some of its tool
// calls with results that are JSON already (a gateway relaying an upstream's
// answer as bytes, internal/gateway/fast.go). The server offers it every call
// of its transport's fast path first (transport.AnswerRaw); it declines, with
// ok false and nothing run, the calls it does not answer so.
type RawToolCaller interface {
	CallToolRaw(ctx context.Context, r *http.Request, call *transport.ToolCall) (result json.RawMessage, ok bool, err error)
}

// answerRaw lets the extension answer fast-path calls with raw results, when
// it can.
func (s *mcpServer) answerRaw(fast *transport.FastToolCalls) {
	if rt, ok := s.opts.Extension.(RawToolCaller); ok {
		fast.AnswerRaw(rt.CallToolRaw)
	}
}
