// Package slack implements the slack:// producer: post the exchange's body as a Slack
// message, with a bot token (Web API chat.postMessage, through
// github.com/slack-go/slack) or to an incoming webhook.
//
//	steps:
//	  - wiretap: slack://ops-channel                          # token from SLACK_BOT_TOKEN
//	  - target: slack://alerts?webhookUrl=${env:SLACK_WEBHOOK_URL}
//
// The options and headers are declared in spec.go ([Spec]); docs/slack.md tells the
// whole story. In short: a string body is the text; a map with "blocks" is a Block Kit
// message whose "text" is the fallback; a map with only "text" is that text; any other
// body is shown as indented JSON in a code block. The body is not changed.
//
// Errors: Slack's ok:false answers become a [*APIError] naming Slack's error code; a
// 429 is retried after its Retry-After within maxRetries and maxRetryWait and the
// exchange's context, then fails with a [*RateLimitError]. No error or log line ever
// holds the token or the webhook URL.
//
// The component is producer-only: CreateConsumer returns component.ErrProducerOnly.
package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackutilsx"

	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Options configure a Component; nil or the zero value means defaults.
type Options struct {
	// APIURL replaces DefaultAPIURL for endpoints without an apiUrl option: programs
	// embedding Helix and tests point every slack:// endpoint at another server here.
	APIURL string
	// HTTPClient sends the requests; nil means a client with pooled connections shared
	// by the component's endpoints. Its Timeout, if any, applies besides the timeout
	// option.
	HTTPClient *nethttp.Client
	// Logger receives the component's few log lines (a retry after a 429); nil means
	// slog.Default. It is called when a line is written, so a logger set on the engine
	// context after the component was built is used.
	Logger func() *slog.Logger
}

// Component is the slack:// component. Safe for concurrent use.
type Component struct {
	apiURL string
	client *nethttp.Client
	logger func() *slog.Logger
}

var (
	_ component.Component = (*Component)(nil)
	_ component.Lifecycle = (*Component)(nil)
	_ component.Described = (*Component)(nil)
)

// New returns a slack component; it starts nothing.
func New(opts *Options) *Component {
	c := &Component{logger: slog.Default}
	if opts == nil {
		opts = &Options{}
	}
	c.apiURL = opts.APIURL
	c.client = opts.HTTPClient
	if c.client == nil {
		c.client = &nethttp.Client{Transport: &nethttp.Transport{
			Proxy:                 nethttp.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}}
	}
	if opts.Logger != nil {
		c.logger = opts.Logger
	}
	return c
}

// Start is part of component.Lifecycle; there is nothing to open.
func (c *Component) Start(context.Context) error { return nil }

// Stop closes idle pooled connections (and so their goroutines).
func (c *Component) Stop(context.Context) error {
	c.client.CloseIdleConnections()
	return nil
}

// uriOptions are the URI's options (see Spec).
type uriOptions struct {
	Token           string        `option:"token"`
	TokenGiven      bool          `option:"token,given"`
	WebhookURL      string        `option:"webhookUrl"`
	WebhookURLGiven bool          `option:"webhookUrl,given"`
	Username        string        `option:"username"`
	IconEmoji       string        `option:"iconEmoji"`
	IconURL         string        `option:"iconUrl"`
	ThreadTs        string        `option:"threadTs"`
	APIURL          string        `option:"apiUrl"`
	APIURLGiven     bool          `option:"apiUrl,given"`
	Timeout         time.Duration `option:"timeout"`
	MaxRetries      int64         `option:"maxRetries"`
	MaxRetryWait    time.Duration `option:"maxRetryWait"`
}

var uriBinding = component.Bind[uriOptions](Spec)

// CreateEndpoint checks the options and finds the credentials; it sends nothing.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	if u.Scheme != Spec.Scheme {
		return nil, fmt.Errorf("the slack component serves slack://, not %s://", u.Scheme)
	}
	opts, err := uriBinding.Parse(u)
	if err != nil {
		return nil, err
	}
	e := &endpoint{
		c: c, shown: Spec.Redact(u.Raw), channel: u.Host,
		username: opts.Username, iconEmoji: opts.IconEmoji, iconURL: opts.IconURL,
		threadTs: opts.ThreadTs, timeout: opts.Timeout,
		maxRetries: int(opts.MaxRetries), maxRetryWait: opts.MaxRetryWait,
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("%q is not a channel: write the channel name or ID alone, as in slack://ops-channel", u.Host+u.Path)
	}
	if e.timeout <= 0 {
		return nil, fmt.Errorf("option timeout=%s must be positive", e.timeout)
	}
	if e.maxRetries < 0 {
		return nil, fmt.Errorf("option maxRetries=%d must be 0 or more", e.maxRetries)
	}
	if e.maxRetryWait < 0 {
		return nil, fmt.Errorf("option maxRetryWait=%s must be 0 or more", e.maxRetryWait)
	}
	token, hook := opts.Token, opts.WebhookURL
	switch {
	case opts.TokenGiven && opts.WebhookURLGiven:
		return nil, errors.New("give token or webhookUrl, not both: a bot token posts through the Web API, a webhook URL to its own channel")
	case opts.TokenGiven:
		if token == "" {
			return nil, errors.New("option token is empty: give a bot token (xoxb-…), as token=${env:SLACK_BOT_TOKEN}")
		}
	case opts.WebhookURLGiven:
		if hook == "" {
			return nil, errors.New("option webhookUrl is empty: give an incoming webhook URL, as webhookUrl=${env:SLACK_WEBHOOK_URL}")
		}
	default:
		token, hook = os.Getenv(EnvBotToken), ""
		if token == "" {
			hook = os.Getenv(EnvWebhookURL)
		}
		if token == "" && hook == "" {
			return nil, fmt.Errorf("no Slack credentials: set the environment variable %s (a bot token, xoxb-…) or %s, or give the option token=${env:NAME} or webhookUrl=${env:NAME}", EnvBotToken, EnvWebhookURL)
		}
	}
	// Slack's errors may quote what was sent; the token and the webhook URL (whose
	// path is its secret) never reach a caller, a log or a span.
	redact.AddSecret(token, hook)
	if e.channel == "" && hook == "" {
		return nil, errors.New("no channel: write it as slack://ops-channel (a name or an ID such as C0123456789)")
	}
	if hook != "" {
		pu, err := url.Parse(hook)
		if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
			return nil, errors.New("webhookUrl is not an http(s) URL (the value is secret and not shown)")
		}
		e.webhook = hook
		return e, nil
	}
	api := opts.APIURL
	if !opts.APIURLGiven && c.apiURL != "" {
		api = c.apiURL
	}
	if pu, err := url.Parse(api); err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
		return nil, fmt.Errorf("apiUrl %q is not an http(s) URL", api)
	}
	if !strings.HasSuffix(api, "/") {
		api += "/" // slack-go appends the method name
	}
	e.token = token
	e.api = slack.New(token, slack.OptionAPIURL(api), slack.OptionHTTPClient(c.client))
	return e, nil
}

type endpoint struct {
	c       *Component
	shown   string // the URI with secret values hidden, for errors
	channel string

	token   string        // bot token mode …
	api     *slack.Client // … through slack-go
	webhook string        // or webhook mode

	username, iconEmoji, iconURL, threadTs string
	timeout                                time.Duration
	maxRetries                             int
	maxRetryWait                           time.Duration
}

func (e *endpoint) URI() string { return e.shown }

func (e *endpoint) CreateProducer() (component.Producer, error) { return &producer{e: e}, nil }

func (e *endpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, fmt.Errorf("slack:// posts messages and cannot trigger a workflow (to react to Slack events, receive Slack's requests with http-server://): %w", component.ErrProducerOnly)
}

type producer struct {
	e *endpoint
}

func (p *producer) Start(context.Context) error { return nil }

// Stop closes idle connections of the component's pool; requests in flight are not
// affected (the engine drains them before stopping producers).
func (p *producer) Stop(context.Context) error {
	p.e.c.client.CloseIdleConnections()
	return nil
}

// Process posts one message; the body is left as it was. Safe for concurrent use.
func (p *producer) Process(ctx context.Context, ex *exchange.Exchange) error {
	e := p.e
	msg, err := messageOf(ex.In().Body())
	if err != nil {
		return fmt.Errorf("%s: %w", e.shown, err)
	}
	msg.threadTs = e.threadTs
	if msg.threadTs == "" {
		msg.threadTs = ex.In().HeaderString(HeaderThreadTs)
	}
	var channel, ts string
	waited := time.Duration(0)
	for attempt := 0; ; attempt++ {
		if e.webhook != "" {
			err = e.postWebhook(ctx, msg)
		} else {
			channel, ts, err = e.postAPI(ctx, msg)
		}
		var rl *RateLimitError
		if !errors.As(err, &rl) {
			break
		}
		rl.Attempts = attempt + 1
		if attempt >= e.maxRetries {
			rl.Why = fmt.Sprintf("gave up after %d attempts (option maxRetries=%d)", attempt+1, e.maxRetries)
			break
		}
		if waited+rl.RetryAfter > e.maxRetryWait {
			rl.Why = fmt.Sprintf("waiting would exceed option maxRetryWait=%s (waited %s so far)", e.maxRetryWait, waited)
			break
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < rl.RetryAfter {
			rl.Why = "waiting would exceed the exchange's deadline"
			break
		}
		e.c.logger().Debug("slack: rate limited, retrying", "endpoint", e.shown, "retryAfter", rl.RetryAfter, "attempt", attempt+1)
		t := time.NewTimer(rl.RetryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: cancelled while waiting %s to retry after Slack's 429: %w", e.shown, rl.RetryAfter, context.Cause(ctx))
		case <-t.C:
		}
		waited += rl.RetryAfter
	}
	if err != nil {
		return fmt.Errorf("%s: %w", e.shown, err)
	}
	if e.webhook == "" {
		ex.In().SetHeader(HeaderChannel, channel)
		ex.In().SetHeader(HeaderTs, ts)
	}
	return nil
}

// message is what one post sends.
type message struct {
	text     string
	blocks   []slack.Block // rawBlock values, sent as written
	threadTs string
}

// messageOf turns a body into a message (see the package documentation).
func messageOf(body any) (*message, error) {
	switch b := body.(type) {
	case nil:
		return nil, errors.New("the body is empty: nothing to post (give the text, or a map with blocks)")
	case string:
		if strings.TrimSpace(b) == "" {
			return nil, errors.New("the body is an empty text: nothing to post")
		}
		return &message{text: b}, nil
	case []byte:
		return messageOf(string(b))
	case json.RawMessage:
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return messageOf(string(b))
		}
		return messageOf(v)
	case map[string]any:
		if raw, ok := b["blocks"]; ok {
			return blockMessage(b, raw)
		}
		if t, ok := b["text"].(string); ok && len(b) == 1 {
			return messageOf(t)
		}
	}
	return jsonMessage(body)
}

// blockMessage builds a Block Kit message from a map body with "blocks".
func blockMessage(body map[string]any, raw any) (*message, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf(`"blocks" must be a list of Block Kit blocks, not %s`, typeName(raw))
	}
	if len(list) == 0 {
		return nil, errors.New(`"blocks" is an empty list: give at least one block, such as {"type": "section", "text": {"type": "mrkdwn", "text": "…"}}`)
	}
	m := &message{}
	if t, ok := body["text"]; ok {
		s, isString := t.(string)
		if !isString {
			return nil, fmt.Errorf(`"text" beside "blocks" must be a string (the notification fallback), not %s`, typeName(t))
		}
		m.text = s
	}
	for i, bl := range list {
		bm, ok := bl.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("blocks[%d] must be a map with a \"type\", not %s", i, typeName(bl))
		}
		typ, _ := bm["type"].(string)
		if typ == "" {
			return nil, fmt.Errorf("blocks[%d] has no \"type\" (section, header, divider, context, actions, image …)", i)
		}
		data, err := json.Marshal(bm)
		if err != nil {
			return nil, fmt.Errorf("blocks[%d]: %w", i, err)
		}
		id, _ := bm["block_id"].(string)
		m.blocks = append(m.blocks, rawBlock{typ: typ, id: id, raw: data})
	}
	return m, nil
}

// jsonMessage shows any other body as indented JSON in a code block; &, < and > are
// escaped as Slack requires, so the JSON shows as written.
func jsonMessage(body any) (*message, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(body); err != nil {
		return nil, fmt.Errorf("the body (%s) cannot be shown as JSON: %w", typeName(body), err)
	}
	return &message{text: "```\n" + slackutilsx.EscapeMessage(strings.TrimRight(buf.String(), "\n")) + "\n```"}, nil
}

// rawBlock is a Block Kit block sent exactly as the workflow wrote it: slack-go's
// typed blocks would drop fields and block types newer than the library.
type rawBlock struct {
	typ, id string
	raw     json.RawMessage
}

func (b rawBlock) BlockType() slack.MessageBlockType { return slack.MessageBlockType(b.typ) }
func (b rawBlock) ID() string                        { return b.id }
func (b rawBlock) MarshalJSON() ([]byte, error)      { return b.raw, nil }

// postAPI sends one chat.postMessage request.
func (e *endpoint) postAPI(ctx context.Context, m *message) (channel, ts string, err error) {
	opts := []slack.MsgOption{slack.MsgOptionText(m.text, false)}
	if len(m.blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(m.blocks...))
	}
	if e.username != "" {
		opts = append(opts, slack.MsgOptionUsername(e.username))
	}
	if e.iconEmoji != "" {
		opts = append(opts, slack.MsgOptionIconEmoji(e.iconEmoji))
	}
	if e.iconURL != "" {
		opts = append(opts, slack.MsgOptionIconURL(e.iconURL))
	}
	if m.threadTs != "" {
		opts = append(opts, slack.MsgOptionTS(m.threadTs))
	}
	rctx, cancel := context.WithTimeoutCause(ctx, e.timeout, errTimeout)
	defer cancel()
	channel, ts, err = e.api.PostMessageContext(rctx, e.channel, opts...)
	if err == nil {
		return channel, ts, nil
	}
	var rl *slack.RateLimitedError
	var se slack.SlackErrorResponse
	var sc slack.StatusCodeError
	switch {
	case errors.As(err, &rl):
		return "", "", &RateLimitError{RetryAfter: rl.RetryAfter}
	case errors.As(err, &se):
		return "", "", &APIError{Method: "chat.postMessage", Code: se.Err, Needed: se.Needed, Channel: e.channel}
	case errors.As(err, &sc):
		if sc.Code == nethttp.StatusTooManyRequests { // without a usable Retry-After
			return "", "", &RateLimitError{RetryAfter: time.Second}
		}
		return "", "", fmt.Errorf("chat.postMessage: Slack answered HTTP %d %s", sc.Code, nethttp.StatusText(sc.Code))
	}
	return "", "", e.transportError("chat.postMessage", rctx, err)
}

// postWebhook sends one message to the incoming webhook. The request is built here,
// not by slack-go, because a webhook's error is in the answer's body
// (invalid_payload, no_service …), which slack-go drops.
func (e *endpoint) postWebhook(ctx context.Context, m *message) error {
	wm := &slack.WebhookMessage{Text: m.text, Username: e.username, IconEmoji: e.iconEmoji, IconURL: e.iconURL, ThreadTimestamp: m.threadTs}
	if len(m.blocks) > 0 {
		wm.Blocks = &slack.Blocks{BlockSet: m.blocks}
	}
	data, err := json.Marshal(wm)
	if err != nil {
		return fmt.Errorf("encode the webhook message: %w", err)
	}
	rctx, cancel := context.WithTimeoutCause(ctx, e.timeout, errTimeout)
	defer cancel()
	req, err := nethttp.NewRequestWithContext(rctx, nethttp.MethodPost, e.webhook, bytes.NewReader(data))
	if err != nil {
		return errors.New("webhook: cannot build the request (the URL is secret and not shown)")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.c.client.Do(req)
	if err != nil {
		return e.transportError("webhook", rctx, err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	switch {
	case resp.StatusCode == nethttp.StatusOK:
		return nil
	case resp.StatusCode == nethttp.StatusTooManyRequests:
		return &RateLimitError{RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	code := strings.TrimSpace(string(text))
	if code == "" || len(code) > 100 || strings.ContainsAny(code, " <{\n") {
		code = "" // an HTML error page or the like, not one of Slack's codes
	}
	return &APIError{Method: "webhook", HTTPStatus: resp.StatusCode, Code: code}
}

// retryAfter reads a Retry-After header in seconds; a missing or unreadable value
// means one second.
func retryAfter(v string) time.Duration {
	var n int64
	if _, err := fmt.Sscan(strings.TrimSpace(v), &n); err != nil || n < 0 {
		return time.Second
	}
	return time.Duration(n) * time.Second
}

// errTimeout is the cause of the endpoint's own timeout.
var errTimeout = fmt.Errorf("slack endpoint timeout: %w", context.DeadlineExceeded)

// transportError describes a failed request without its URL (a webhook URL is a
// secret) or anything else that could hold a credential, keeping the cause for
// errors.Is (context.Canceled, DeadlineExceeded).
func (e *endpoint) transportError(what string, rctx context.Context, err error) error {
	if errors.Is(context.Cause(rctx), errTimeout) {
		return fmt.Errorf("%s: no answer from Slack within %s (option timeout): %w", what, e.timeout, context.DeadlineExceeded)
	}
	if ctxErr := rctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", what, ctxErr)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if e.token != "" {
		msg = strings.ReplaceAll(msg, e.token, "***")
	}
	if e.webhook != "" {
		msg = strings.ReplaceAll(msg, e.webhook, "***")
	}
	return fmt.Errorf("%s: request to Slack failed: %s", what, msg)
}

// RateLimitError is a request Slack refused with HTTP 429 after the retries the
// endpoint allows.
type RateLimitError struct {
	// RetryAfter is Slack's last Retry-After.
	RetryAfter time.Duration
	// Attempts is how many requests were sent.
	Attempts int
	// Why says why no further retry was made.
	Why string
}

func (e *RateLimitError) Error() string {
	msg := fmt.Sprintf("rate limited by Slack (HTTP 429, Retry-After %s)", e.RetryAfter)
	if e.Why != "" {
		msg += ": " + e.Why
	}
	return msg
}

// APIError is Slack's refusal of a message: an ok:false answer of the Web API or a
// webhook's error answer. Code is Slack's error code (channel_not_found …).
type APIError struct {
	// Method is chat.postMessage or webhook.
	Method string
	// Code is Slack's error code; "" when the answer had none.
	Code string
	// HTTPStatus is the status of a webhook's answer (the Web API answers 200).
	HTTPStatus int
	// Needed is the OAuth scope Slack says is missing (missing_scope).
	Needed string
	// Channel is the channel the message was for.
	Channel string
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Method)
	b.WriteString(": Slack refused the message")
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.HTTPStatus)
	}
	if e.Code != "" {
		b.WriteString(": ")
		b.WriteString(e.Code)
	}
	if hint := e.hint(); hint != "" {
		b.WriteString(" (")
		b.WriteString(hint)
		b.WriteString(")")
	}
	return b.String()
}

// hint says what to do about the common codes.
func (e *APIError) hint() string {
	switch e.Code {
	case "channel_not_found":
		return fmt.Sprintf("no channel %q that the bot can see: check the name or use the channel ID, and invite the bot to private channels", e.Channel)
	case "not_in_channel":
		return fmt.Sprintf("invite the bot to %s (/invite @your-bot), or give it the chat:write.public scope", e.Channel)
	case "is_archived", "channel_is_archived":
		return "the channel is archived"
	case "invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive", "invalid_token":
		return "the token is not valid: check the token option or " + EnvBotToken
	case "missing_scope":
		if e.Needed != "" {
			return "the token lacks the scope " + e.Needed + ": add it to the Slack app and reinstall it"
		}
		return "the token lacks a scope (chat:write): add it to the Slack app and reinstall it"
	case "no_text":
		return "the message has no text and no blocks"
	case "invalid_blocks", "invalid_blocks_format":
		return "Slack does not accept the blocks: check them in Block Kit Builder"
	case "msg_too_long":
		return "the text is longer than Slack allows (40,000 characters)"
	case "invalid_payload":
		return "the webhook does not accept the message"
	case "no_service", "no_team":
		return "the webhook URL does not exist or was revoked"
	case "action_prohibited":
		return "the workspace's administrators restrict this webhook"
	}
	return ""
}

// typeName names a body value's kind for errors.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case bool:
		return "a bool"
	case int, int64, float64, int32, float32, uint, uint64:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}
