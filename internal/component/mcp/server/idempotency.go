package server

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
)

// A tools/call carrying an idempotency key in its _meta (durable.MetaKey: Helix's
// mcp:// client sends the key of the durable run's step) is answered once per
// caller, tool and key: a repeat — the calling run resumed after a crash, or a retry
// racing the first call — gets the first call's result without the tool running
// again. The server remembers the answers of the last maxAnswered keyed calls for
// answeredFor, in memory: a repeat after this server restarted runs the tool
// again, unless the tool is durable: its run is named after the caller, tool and
// key, and the durable store answers a repeat with that run's result after a
// restart too. Calls without a key are not remembered.

const (
	maxAnswered = 4096
	answeredFor = 24 * time.Hour
	// maxKeyLen bounds a key the server remembers; a longer one is refused.
	maxKeyLen = 1024
)

// callKey returns the idempotency key in a call's _meta; ok is false when there
// is none. A key that is not a string, or too long, is an error for the caller.
func callKey(meta sdk.Meta) (key string, ok bool, err *sdk.CallToolResult) {
	v, present := meta[durable.MetaKey]
	if !present {
		return "", false, nil
	}
	s, isString := v.(string)
	if !isString || s == "" || len(s) > maxKeyLen {
		return "", false, &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{
			Text: "_meta \"" + durable.MetaKey + "\" must be a non-empty string of at most 1024 bytes; send another key, or none"}}}
	}
	return s, true, nil
}

// answered remembers the results of keyed calls (see above). Safe for concurrent use.
type answered struct {
	mu      sync.Mutex
	entries map[answerKey]*list.Element // of *answer
	order   list.List                   // most recent first
	now     func() time.Time
}

type answerKey struct{ principal, tool, key string }

type answer struct {
	k    answerKey
	done chan struct{} // closed when res is set, or the call ended without one
	res  *sdk.CallToolResult
	at   time.Time
}

func newAnswered() *answered {
	return &answered{entries: map[answerKey]*list.Element{}, now: time.Now}
}

// do returns the remembered result of (principal, key), waiting for a call with
// them still running; otherwise it runs call and remembers its result when final
// is true (a call that stopped to ask its client is no answer: a repeat runs the
// tool).
func (a *answered) do(ctx context.Context, principal, tool, key string, call func() (res *sdk.CallToolResult, final bool)) *sdk.CallToolResult {
	k := answerKey{principal, tool, key}
	for {
		a.mu.Lock()
		if el, ok := a.entries[k]; ok {
			an := el.Value.(*answer)
			if an.res != nil && a.now().Sub(an.at) > answeredFor {
				a.order.Remove(el)
				delete(a.entries, k)
			} else {
				a.order.MoveToFront(el)
				a.mu.Unlock()
				select {
				case <-an.done:
				case <-ctx.Done():
					return sdkCancelled()
				}
				if an.res != nil {
					return answerCopy(an.res)
				}
				continue // the first call gave no answer: run it now
			}
		}
		an := &answer{k: k, done: make(chan struct{})}
		a.entries[k] = a.order.PushFront(an)
		for a.order.Len() > maxAnswered {
			last := a.order.Back()
			a.order.Remove(last)
			delete(a.entries, last.Value.(*answer).k)
		}
		a.mu.Unlock()
		return a.run(an, call)
	}
}

// run runs call for an: it records the result when final, forgets an otherwise
// (also when call panics), and releases the calls waiting for it.
func (a *answered) run(an *answer, call func() (*sdk.CallToolResult, bool)) (res *sdk.CallToolResult) {
	final := false
	defer func() {
		a.mu.Lock()
		if final {
			// The go-sdk writes into the result it sends (its _meta, its
			// resultType): each caller gets a copy of its own.
			an.res, an.at = answerCopy(res), a.now()
		} else if el, ok := a.entries[an.k]; ok && el.Value == an {
			a.order.Remove(el)
			delete(a.entries, an.k)
		}
		a.mu.Unlock()
		close(an.done)
	}()
	res, final = call()
	return res
}

// answerCopy is a copy of res that the go-sdk may write into while it sends
// another copy: the fields it sets are copied, the content is shared (read only).
func answerCopy(res *sdk.CallToolResult) *sdk.CallToolResult {
	c := *res
	c.Meta = maps.Clone(res.Meta)
	return &c
}

// durableCallKey names the durable run of a keyed call: the same caller, tool
// and key name the same run; anything else another. Hashed, so that no key can
// reach into another caller's runs, or put characters in a run id that mean
// something there.
func durableCallKey(principal, tool, key string) string {
	h := sha256.New()
	for _, s := range []string{principal, tool, key} {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	return "mcp-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// durableWorkflows reports whether the workflow named id is durable.
func durableWorkflows(hc *engine.Context) func(id string) bool {
	return func(id string) bool {
		w, ok := hc.Workflow(id)
		return ok && w.Durable
	}
}

func sdkCancelled() *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the call was cancelled"}}}
}

// callPrincipal is the authenticated caller of a request ("" when none): from
// the HTTP POST carrying it (postContext), the call's context, or the go-sdk's
// token info.
func callPrincipal(ctx context.Context, extra *sdk.RequestExtra, postContext func(http.Header) context.Context) string {
	if extra != nil && postContext != nil {
		if pc := postContext(extra.Header); pc != nil {
			if p := security.PrincipalFromContext(pc); p != "" {
				return p
			}
		}
	}
	if p := security.PrincipalFromContext(ctx); p != "" {
		return p
	}
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return "token:" + extra.TokenInfo.UserID
	}
	return ""
}

// callKeyed runs a call made with the go-sdk: once per caller, tool and key when
// its _meta carries a key (see above), else as any call.
func (c *toolCaller) callKeyed(ctx context.Context, t *serverTool, req *sdk.CallToolRequest) *sdk.CallToolResult {
	key, ok, bad := callKey(req.Params.GetMeta())
	if bad != nil {
		return bad
	}
	if !ok || c.answered == nil {
		return c.call(ctx, t, req.Params.Arguments)
	}
	principal := callPrincipal(ctx, req.Extra, c.postContext)
	if c.durableTool != nil && c.durableTool(t.t.ID) {
		// A durable tool's run is named after the call: a repeat, even after
		// this server restarted or on another replica sharing the store, gets
		// that run's result (durable.RunIDFrom reads the header).
		ctx = tool.WithHeaders(ctx, map[string]any{durable.HeaderIdempotencyKey: durableCallKey(principal, t.info.Name, key)})
	}
	return c.answered.do(ctx, principal, t.info.Name, key, func() (*sdk.CallToolResult, bool) {
		// The call runs to its end even when its client goes away (a crashed
		// caller is what keys are for): cut off, it might have caused its side
		// effects without leaving an answer for the repeat. The server's stop
		// still ends it.
		run := context.WithoutCancel(ctx)
		res, asked := c.callAsked(run, t, req.Params.Arguments)
		return res, !asked
	})
}
