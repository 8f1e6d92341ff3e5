// Package policy is the gateway's Guard: who may see and call which tool,
// prompt or resource (allow/deny by principal name, role and OAuth scope),
// Starlang guards on arguments and results, per-principal per-tool rates and
// quotas (in this process, or shared by replicas through the rate_limit_store
// Redis), a maximum result size and a timeout. Build one with [New] from the
// server's policies:.
package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/starlang"
)

// CodeRateLimited is the JSON-RPC error code of a call refused by a rate or a
// quota (a tool call gets an error result instead). Implementation-defined
// server errors are -32000 to -32099.
const CodeRateLimited = -32029

// Options are what a Guard needs besides its rules.
type Options struct {
	// RateLimitStore is the rate_limit_store of the server's security settings
	// (a redis:// or rediss:// URL): rates and quotas are then shared by every
	// replica with the same server id and store. "" keeps them in this process.
	RateLimitStore string
	// Starlang bounds the guard scripts (helix.starlang_max_memory); nil: defaults.
	Starlang *starlang.Options
	// Clock replaces time.Now (tests); with a store it also replaces the
	// Redis server's clock.
	Clock func() time.Time
	// Logger receives guard script failures and store warnings; nil: slog.Default().
	Logger *slog.Logger
	// storeTimeout bounds one decision of the store (0: its default); tests on
	// a busy machine lengthen it so that a slow answer is not an outage.
	storeTimeout time.Duration
}

// rule is one compiled entry of policies:.
type rule struct {
	index  int
	tools  []string
	allow  *config.PrincipalMatch
	deny   *config.PrincipalMatch
	args   *guardScript
	result *guardScript
	rate   *Rate
	quota  *Quota
	max    int64
	limit  time.Duration
}

// maxLoggedError bounds a guard's error in the log.
const maxLoggedError = 300

var _ gateway.Guard = (*guard)(nil)

type guard struct {
	server   string
	rules    []*rule
	wantsAll bool // some rule checks results
	counters counters
	now      func() time.Time
	log      *slog.Logger
}

// Guard is a gateway.Guard that holds connections to a shared store until Close.
type Guard interface {
	gateway.Guard
	Close() error
}

// New compiles rules, the policies: of the gateway server server, into its
// Guard. Every problem is reported, each at its rule's position (a script's
// at the line and column inside the script). New performs no I/O: a store is
// connected to on the first call that needs it.
func New(server string, rules []config.PolicyConfig, opts Options) (Guard, error) {
	g := &guard{server: server, now: opts.Clock, log: opts.Logger}
	if g.now == nil {
		g.now = time.Now
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	var errs []error
	fail := func(pc config.PolicyConfig, i int, key, format string, args ...any) {
		path := pc.Path
		if path == "" {
			path = "policies[" + strconv.Itoa(i) + "]"
		}
		errs = append(errs, &config.Error{Pos: pc.Pos, Path: path + key, Msg: fmt.Sprintf(format, args...)})
	}
	limited := false
	for i, pc := range rules {
		r := &rule{index: i, tools: pc.Tools, allow: pc.Allow, deny: pc.Deny, max: pc.MaxResultBytes, limit: pc.Timeout}
		if len(pc.Tools) == 0 {
			fail(pc, i, ".tools", `names no tools: list the served names (globs) the policy applies to, e.g. tools: ["github.*"]`)
		}
		for j, t := range pc.Tools {
			if t == "" {
				fail(pc, i, fmt.Sprintf(".tools[%d]", j), "is empty")
			} else if err := checkGlob(t); err != nil {
				fail(pc, i, fmt.Sprintf(".tools[%d]", j), "%q is not a valid glob: %v", t, err)
			}
		}
		for key, m := range map[string]*config.PrincipalMatch{".allow": pc.Allow, ".deny": pc.Deny} {
			if m != nil && len(m.Principals)+len(m.Roles)+len(m.Scopes) == 0 {
				fail(pc, i, key, "names no principals, roles or scopes: it would match nobody")
			}
		}
		if pc.Allow == nil && pc.Deny == nil && pc.Arguments == "" && pc.Result == "" && pc.Rate == "" && pc.Quota == "" &&
			pc.MaxResultBytes == 0 && pc.Timeout == 0 {
			fail(pc, i, "", "does nothing: give it allow:, deny:, arguments:, result:, rate:, quota:, max_result_bytes: or timeout:")
		}
		if pc.MaxResultBytes < 0 {
			fail(pc, i, ".max_result_bytes", "must be a positive size, got %d", pc.MaxResultBytes)
		}
		if pc.Timeout < 0 {
			fail(pc, i, ".timeout", "must be a positive duration, got %s", pc.Timeout)
		}
		if pc.Rate != "" {
			rt, err := ParseRate(pc.Rate)
			if err != nil {
				fail(pc, i, ".rate", "%v", err)
			}
			r.rate, limited = &rt, true
		}
		if pc.Quota != "" {
			q, err := ParseQuota(pc.Quota)
			if err != nil {
				fail(pc, i, ".quota", "%v", err)
			}
			r.quota, limited = &q, true
		}
		var err error
		if pc.Arguments != "" {
			if r.args, err = compileGuard(pc.Arguments, scriptPos(pc.ArgumentsPos, pc.Pos), "args", opts.Starlang); err != nil {
				errs = append(errs, fmt.Errorf("%s.arguments: %w", pathOf(pc, i), err))
			}
		}
		if pc.Result != "" {
			if r.result, err = compileGuard(pc.Result, scriptPos(pc.ResultPos, pc.Pos), "result", opts.Starlang); err != nil {
				errs = append(errs, fmt.Errorf("%s.result: %w", pathOf(pc, i), err))
			}
		}
		g.wantsAll = g.wantsAll || r.result != nil || r.max > 0
		g.rules = append(g.rules, r)
	}
	if opts.RateLimitStore != "" && limited {
		c, err := newShared(server, opts, g.now, g.log)
		if err != nil {
			errs = append(errs, fmt.Errorf("policies of %q: %w", server, err))
		}
		g.counters = c
	} else {
		g.counters = newLocal(g.now)
	}
	if len(errs) > 0 {
		if g.counters != nil {
			_ = g.counters.close()
		}
		return nil, errors.Join(errs...)
	}
	return g, nil
}

func pathOf(pc config.PolicyConfig, i int) string {
	if pc.Path != "" {
		return pc.Path
	}
	return "policies[" + strconv.Itoa(i) + "]"
}

// scriptPos is where a script starts, or its rule when that is unknown.
func scriptPos(p, rule config.Pos) config.Pos {
	if p.Line > 0 {
		return p
	}
	return rule
}

// storeOptions are what a shared store is opened with.
type storeOptions struct {
	url, namespace string
	clock          func() time.Time
	timeout        time.Duration
}

// openStore opens a rate_limit_store; nil in a build without the Redis client.
var openStore func(storeOptions) (sharedStore, error)

func newShared(server string, opts Options, now func() time.Time, log *slog.Logger) (counters, error) {
	// The security stack's check names the store's kind and says when this
	// build left its client out; its errors never quote the URL.
	if err := security.CheckRateLimitStore(opts.RateLimitStore); err != nil {
		return nil, err
	}
	if openStore == nil {
		return nil, errors.New("rate_limit_store: this build has no Redis client")
	}
	st, err := openStore(storeOptions{url: opts.RateLimitStore, namespace: "helix:gateway:" + server + ":", clock: opts.Clock,
		timeout: opts.storeTimeout})
	if err != nil {
		return nil, err
	}
	return &shared{server: server, store: st, local: newLocal(now), now: now, log: log}, nil
}

// Close releases the shared store's connections.
func (g *guard) Close() error { return g.counters.close() }

// matching returns the rules whose tools match name, in order.
func (g *guard) matching(name string) []*rule {
	var out []*rule
	for _, r := range g.rules {
		for _, t := range r.tools {
			if glob(t, name) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// permitted applies allow and deny: a deny that matches p wins; when any of
// rules has an allow, p must match one of them.
func permitted(rules []*rule, p *gateway.Principal) bool {
	anyAllow, allowed := false, false
	for _, r := range rules {
		if r.deny != nil && matches(r.deny, p) {
			return false
		}
		if r.allow != nil {
			anyAllow = true
			allowed = allowed || matches(r.allow, p)
		}
	}
	return !anyAllow || allowed
}

// Visible hides what p may not call.
func (g *guard) Visible(_ context.Context, p *gateway.Principal, _ gateway.Kind, name string) bool {
	return permitted(g.matching(name), p)
}

// Before applies, in order: allow/deny, rates, quotas, argument guards.
func (g *guard) Before(ctx context.Context, c *gateway.Call) error {
	rules := g.matching(c.Name)
	if len(rules) == 0 {
		return nil
	}
	p := c.Principal
	if !permitted(rules, p) {
		// The answer to a name that does not exist: a caller learns nothing of
		// what it may not see.
		return &gateway.Refusal{Code: jsonrpc.CodeInvalidParams, Message: unknown(c), Reason: gateway.OutcomeDenied}
	}
	now := g.now()
	who := limitKey(p)
	for _, r := range rules {
		if r.rate == nil {
			continue
		}
		key := "r" + strconv.Itoa(r.index) + ":" + keyName(c.Name) + who
		if ok, wait := g.counters.take(ctx, key, *r.rate); !ok {
			return &gateway.Refusal{Code: CodeRateLimited, Reason: gateway.OutcomeRateLimited, RetryAfter: wait,
				Message: fmt.Sprintf("rate limit of %s for %s exceeded; try again in %s", r.rate, c.Name, roundUp(wait))}
		}
	}
	for _, r := range rules {
		if r.quota == nil {
			continue
		}
		start := now.Truncate(r.quota.Window) // whole windows since the Unix epoch
		end := start.Add(r.quota.Window)
		key := "q" + strconv.Itoa(r.index) + ":" + keyName(c.Name) + who
		if n := g.counters.count(ctx, key, start, end); n > r.quota.N {
			wait := end.Sub(now)
			return &gateway.Refusal{Code: CodeRateLimited, Reason: gateway.OutcomeRateLimited, RetryAfter: wait,
				Message: fmt.Sprintf("quota of %s for %s used up; it renews in %s", r.quota, c.Name, roundUp(wait))}
		}
	}
	for _, r := range rules {
		if r.args == nil {
			continue
		}
		out, refused := r.args.run(ctx, c.Name, p, c.Arguments)
		if refused != nil {
			return g.refused(ctx, c, "argument", refused, jsonrpc.CodeInvalidParams)
		}
		c.Arguments = out
	}
	return nil
}

// WantsResult reports whether a rule of c's name checks results.
func (g *guard) WantsResult(c *gateway.Call) bool {
	if !g.wantsAll {
		return false
	}
	for _, r := range g.matching(c.Name) {
		if r.result != nil || r.max > 0 {
			return true
		}
	}
	return false
}

// After refuses a result larger than max_result_bytes (before and after the
// output guards, which may grow it) and runs the output guards.
func (g *guard) After(ctx context.Context, c *gateway.Call, result json.RawMessage) (json.RawMessage, error) {
	rules := g.matching(c.Name)
	limit := int64(0)
	for _, r := range rules {
		if r.max > 0 && (limit == 0 || r.max < limit) {
			limit = r.max
		}
	}
	tooLarge := func(res json.RawMessage) error {
		if limit > 0 && int64(len(res)) > limit {
			return &gateway.Refusal{Code: jsonrpc.CodeInternalError, Reason: gateway.OutcomeGuard,
				Message: fmt.Sprintf("the result of %s is %d bytes, more than the %d this gateway passes on (max_result_bytes)", c.Name, len(res), limit)}
		}
		return nil
	}
	if err := tooLarge(result); err != nil {
		return nil, err
	}
	for _, r := range rules {
		if r.result == nil {
			continue
		}
		out, refused := r.result.run(ctx, c.Name, c.Principal, result)
		if refused != nil {
			return nil, g.refused(ctx, c, "output", refused, jsonrpc.CodeInternalError)
		}
		result = out
	}
	if err := tooLarge(result); err != nil {
		return nil, err
	}
	return result, nil
}

// Timeout is the shortest timeout of the rules of c's name; 0 when none sets one.
func (g *guard) Timeout(c *gateway.Call) time.Duration {
	var d time.Duration
	for _, r := range g.matching(c.Name) {
		if r.limit > 0 && (d == 0 || r.limit < d) {
			d = r.limit
		}
	}
	return d
}

// refused turns a guard's refusal into the client's answer. reject(msg) tells
// the client msg; any other failure of the script is logged with its position
// and the client is told only that the guard failed, nothing of the script.
func (g *guard) refused(ctx context.Context, c *gateway.Call, which string, r *guardRefusal, code int64) error {
	if r.msg != "" {
		return &gateway.Refusal{Code: code, Message: r.msg, Reason: gateway.OutcomeGuard}
	}
	if err := ctx.Err(); err != nil {
		// The call ended while its guard ran: no fault of the script's.
		reason := gateway.OutcomeCancelled
		if errors.Is(err, context.DeadlineExceeded) {
			reason = gateway.OutcomeTimeout
		}
		return &gateway.Refusal{Code: code, Reason: reason, Message: fmt.Sprintf("the call of %s ended during its %s guard: %v", c.Name, which, err)}
	}
	// The error says where in the script and what; cut short, since the
	// interpreter's messages may quote values of the call.
	g.log.Warn("gateway "+which+" guard failed", "server", g.server, "name", c.Name, "principal", principalName(c.Principal),
		"error", cut(r.err.Error(), maxLoggedError))
	return &gateway.Refusal{Code: code, Reason: gateway.OutcomeGuard,
		Message: fmt.Sprintf("the %s guard of %s failed; the gateway's log says why", which, c.Name)}
}

// unknown is the message a caller gets for a name it may not use.
func unknown(c *gateway.Call) string {
	kind := string(c.Kind)
	if kind == "" {
		kind = string(gateway.KindTool)
	}
	return fmt.Sprintf("unknown %s %q", kind, c.Name)
}

// limitKey is who a rate or quota counts for: the principal's id (unique per
// API key and per issuer and subject), else its name, else "anonymous": every
// caller without credentials shares one bucket per tool.
func limitKey(p *gateway.Principal) string {
	switch {
	case p == nil:
		return "anonymous"
	case p.ID != "":
		return "id:" + p.ID
	case p.Name != "":
		return "name:" + p.Name
	}
	return "anonymous"
}

func principalName(p *gateway.Principal) string {
	switch {
	case p == nil:
		return "anonymous"
	case p.Name != "":
		return p.Name
	case p.ID != "":
		return p.ID
	}
	return "anonymous"
}

// maxKeyName is the longest name kept as itself in a bucket's key; a longer
// one (a caller may send any name) is replaced by its digest, so that keys in
// memory and in Redis stay small.
const maxKeyName = 256

// keyName is name as part of a key: length-prefixed, so that keys stay
// unambiguous whatever a name contains, or its SHA-256 when it is long.
func keyName(name string) string {
	if len(name) > maxKeyName {
		sum := sha256.Sum256([]byte(name))
		return "#" + hex.EncodeToString(sum[:])
	}
	return strconv.Itoa(len(name)) + ":" + name
}

// roundUp renders d rounded up to a whole second (at least one).
func roundUp(d time.Duration) time.Duration {
	s := (d + time.Second - 1) / time.Second * time.Second
	return max(s, time.Second)
}
