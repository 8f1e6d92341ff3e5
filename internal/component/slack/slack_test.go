package slack_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/componenttest"
	"github.com/arvenza/helix/internal/component/slack"
	"github.com/arvenza/helix/internal/component/slack/slacktest"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "xoxb-1111-2222-s3cretT0ken"

// conformanceFixture posts through the fake in token or webhook mode; the fake
// reports each message's text to the suite and holds componenttest.BlockBody until
// the request is cancelled.
func conformanceFixture(webhook bool) func(t *testing.T) *componenttest.Fixture {
	return func(t *testing.T) *componenttest.Fixture {
		fake := slacktest.NewServer(t, token)
		ch := make(chan componenttest.Message, 1024)
		fake.Before = func(ctx context.Context, m slacktest.Message) *slacktest.Fault {
			ch <- componenttest.Message{Body: m.Text}
			if m.Text == componenttest.BlockBody {
				<-ctx.Done()
			}
			return nil
		}
		raw := "slack://conformance?token=" + token
		if webhook {
			raw = "slack://conformance?webhookUrl=" + url.QueryEscape(fake.WebhookURL())
		}
		comp := slack.New(&slack.Options{APIURL: fake.APIURL()})
		t.Cleanup(func() { _ = comp.Stop(context.Background()) })
		return &componenttest.Fixture{Component: comp, URI: raw, Listen: func() <-chan componenttest.Message { return ch }}
	}
}

func TestConformance(t *testing.T) {
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{Producer: true, ProducerCancel: true, Stress: true},
		Setup:    conformanceFixture(false),
	})
}

func TestConformanceWebhook(t *testing.T) {
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{Producer: true, ProducerCancel: true},
		Setup:    conformanceFixture(true),
	})
}

// producer builds and starts a producer for raw on comp.
func producer(t *testing.T, comp *slack.Component, raw string) component.Producer {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := comp.CreateEndpoint(u)
	if err != nil {
		t.Fatalf("CreateEndpoint(%s): %v", raw, err)
	}
	p, err := ep.CreateProducer()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

func send(t *testing.T, p component.Producer, body any) (*exchange.Exchange, error) {
	t.Helper()
	ex := exchange.NewWithBody(exchange.InOut, body)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return ex, p.Process(ctx, ex)
}

func newFake(t *testing.T) (*slacktest.Server, *slack.Component) {
	fake := slacktest.NewServer(t, token)
	comp := slack.New(&slack.Options{APIURL: fake.APIURL()})
	t.Cleanup(func() { _ = comp.Stop(context.Background()) })
	return fake, comp
}

// A text body is posted as it is to the channel of the URI, with the sender options;
// the body stays, and the message's channel ID and timestamp come back as headers.
func TestPostText(t *testing.T) {
	fake, comp := newFake(t)
	p := producer(t, comp, "slack://ops-channel?token="+token+"&username=helix&iconEmoji=:rocket:&iconUrl=https://example.com/i.png")
	ex, err := send(t, p, "Deployed *api* 1.2 <@U123>")
	if err != nil {
		t.Fatal(err)
	}
	m := fake.Next(t)
	want := slacktest.Message{Via: "api", Channel: "ops-channel", Text: "Deployed *api* 1.2 <@U123>", Username: "helix",
		IconEmoji: ":rocket:", IconURL: "https://example.com/i.png", Ts: "1700000000.000001"}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("Slack received %+v\nwant %+v", m, want)
	}
	if ex.In().Body() != "Deployed *api* 1.2 <@U123>" {
		t.Errorf("the body changed to %v", ex.In().Body())
	}
	if ex.In().HeaderString(slack.HeaderTs) != m.Ts || ex.In().HeaderString(slack.HeaderChannel) != slacktest.ChannelID("ops-channel") {
		t.Errorf("headers %v", ex.In().Headers())
	}

	// A reply in the thread: the header HelixSlackThreadTs, or the threadTs option.
	ex = exchange.NewWithBody(exchange.InOnly, "follow-up")
	ex.In().SetHeader(slack.HeaderThreadTs, m.Ts)
	if err := p.Process(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	if got := fake.Next(t); got.ThreadTs != m.Ts || got.Text != "follow-up" {
		t.Errorf("thread reply %+v", got)
	}
	p2 := producer(t, comp, "slack://ops-channel?token="+token+"&threadTs=1700000000.000001")
	if _, err := send(t, p2, []byte("bytes too")); err != nil {
		t.Fatal(err)
	}
	if got := fake.Next(t); got.ThreadTs != "1700000000.000001" || got.Text != "bytes too" {
		t.Errorf("threadTs option %+v", got)
	}
}

// A map with blocks is a Block Kit message: the blocks arrive as written (block
// types slack-go does not know included), text is the fallback.
func TestBlockKit(t *testing.T) {
	fake, comp := newFake(t)
	for _, raw := range []string{"slack://ops-channel?token=" + token, "slack://ops-channel?webhookUrl=" + url.QueryEscape(fake.WebhookURL())} {
		p := producer(t, comp, raw)
		blocks := []any{
			map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": "Deployed"}},
			map[string]any{"type": "section", "block_id": "s1", "text": map[string]any{"type": "mrkdwn", "text": "*api* 1.2"},
				"fields": []any{map[string]any{"type": "mrkdwn", "text": "env: staging"}}},
			map[string]any{"type": "divider"},
			map[string]any{"type": "brand_new_block", "future_field": []any{1.0, "x"}},
		}
		if _, err := send(t, p, map[string]any{"text": "Deployed api 1.2", "blocks": blocks}); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		m := fake.Next(t)
		if m.Text != "Deployed api 1.2" || !reflect.DeepEqual(m.Blocks, blocks) {
			t.Errorf("%s: Slack received text %q blocks %#v", raw, m.Text, m.Blocks)
		}
	}

	// Blocks Slack could not take are refused before anything is sent.
	p := producer(t, comp, "slack://ops-channel?token="+token)
	before := fake.Requests()
	for body, want := range map[string]map[string]any{
		`"blocks" must be a list`:                 {"blocks": "nope"},
		`"blocks" is an empty list`:               {"blocks": []any{}},
		`blocks[1] must be a map`:                 {"blocks": []any{map[string]any{"type": "divider"}, "x"}},
		`blocks[0] has no "type"`:                 {"blocks": []any{map[string]any{"text": "x"}}},
		`"text" beside "blocks" must be a string`: {"blocks": []any{map[string]any{"type": "divider"}}, "text": 5},
	} {
		if _, err := send(t, p, want); err == nil || !strings.Contains(err.Error(), body) {
			t.Errorf("body %v: got %v, want %q", want, err, body)
		}
	}
	if fake.Requests() != before {
		t.Error("an invalid body reached Slack")
	}
}

// Other bodies: {"text": …} alone is that text; any other map, a list or a number is
// indented JSON in a code block, with &, < and > escaped for Slack; nothing is an error.
func TestOtherBodies(t *testing.T) {
	fake, comp := newFake(t)
	p := producer(t, comp, "slack://ops-channel?token="+token)
	for _, tc := range []struct {
		body any
		want string
	}{
		{map[string]any{"text": "just text"}, "just text"},
		{map[string]any{"status": "deployed", "note": "a<b & c>d"}, "```\n{\n  \"note\": \"a&lt;b &amp; c&gt;d\",\n  \"status\": \"deployed\"\n}\n```"},
		{[]any{1.0, "x"}, "```\n[\n  1,\n  \"x\"\n]\n```"},
		{42, "```\n42\n```"},
	} {
		if _, err := send(t, p, tc.body); err != nil {
			t.Fatal(err)
		}
		if m := fake.Next(t); m.Text != tc.want {
			t.Errorf("body %v: Slack received %q, want %q", tc.body, m.Text, tc.want)
		}
	}
	for _, body := range []any{nil, "", "  \n"} {
		if _, err := send(t, p, body); err == nil || !strings.Contains(err.Error(), "nothing to post") {
			t.Errorf("body %q: got %v", body, err)
		}
	}
}

// Slack's ok:false answers fail the exchange with Slack's code and a hint; the token
// is in none of them.
func TestOkFalse(t *testing.T) {
	fake, comp := newFake(t)
	fake.Channels = []string{"ops-channel"}
	fake.Before = func(_ context.Context, m slacktest.Message) *slacktest.Fault {
		if m.Text == "scope" {
			return &slacktest.Fault{Error: "missing_scope"}
		}
		return nil
	}
	for _, tc := range []struct{ raw, body, want string }{
		{"slack://nowhere?token=" + token, "hi", `chat.postMessage: Slack refused the message: channel_not_found (no channel "nowhere" that the bot can see`},
		{"slack://ops-channel?token=xoxb-wrong-" + token[5:], "hi", "chat.postMessage: Slack refused the message: invalid_auth (the token is not valid"},
		{"slack://ops-channel?token=" + token, "scope", "missing_scope (the token lacks a scope (chat:write)"},
	} {
		_, err := send(t, producer(t, comp, tc.raw), tc.body)
		var apiErr *slack.APIError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &apiErr) {
			t.Errorf("%s: got %v, want %q", tc.raw, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), token[5:]) {
			t.Errorf("the error shows the token: %v", err)
		}
		if !strings.HasPrefix(err.Error(), "slack://") || !strings.Contains(err.Error(), "token=***") {
			t.Errorf("the error does not name the endpoint with its token hidden: %v", err)
		}
	}
	if n := len(fake.Messages()); n != 0 {
		t.Errorf("%d messages accepted", n)
	}
}

// A 429 is retried after its Retry-After; the retries are bounded by maxRetries, by
// maxRetryWait and by the exchange's context.
func TestRateLimit(t *testing.T) {
	fake, comp := newFake(t)
	var mu sync.Mutex
	limited := map[string]int{} // text → how many 429s still to answer
	retryAfter := map[string]int{}
	fake.Before = func(_ context.Context, m slacktest.Message) *slacktest.Fault {
		mu.Lock()
		defer mu.Unlock()
		if limited[m.Text] > 0 {
			limited[m.Text]--
			return slacktest.RateLimited(retryAfter[m.Text])
		}
		return nil
	}
	set := func(text string, n, after int) {
		mu.Lock()
		limited[text], retryAfter[text] = n, after
		mu.Unlock()
	}
	base := "slack://ops-channel?token=" + token

	// Two 429s, then accepted: three requests, one message.
	set("twice", 2, 0)
	start := fake.Requests()
	if _, err := send(t, producer(t, comp, base), "twice"); err != nil {
		t.Fatal(err)
	}
	if got := fake.Requests() - start; got != 3 {
		t.Errorf("%d requests, want 3", got)
	}
	if m := fake.Next(t); m.Text != "twice" {
		t.Errorf("got %+v", m)
	}

	// The wait is real: Retry-After: 1 holds the retry back for a second.
	set("wait", 1, 1)
	t0 := time.Now()
	if _, err := send(t, producer(t, comp, base), "wait"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < time.Second {
		t.Errorf("retried after %s, before Slack's Retry-After of 1s", d)
	}
	fake.Next(t)

	// Always limited: maxRetries=2 gives three attempts, then a clear error.
	set("always", 100, 0)
	start = fake.Requests()
	_, err := send(t, producer(t, comp, base+"&maxRetries=2"), "always")
	var rl *slack.RateLimitError
	if !errors.As(err, &rl) || rl.Attempts != 3 || !strings.Contains(err.Error(), "rate limited by Slack (HTTP 429, Retry-After 0s): gave up after 3 attempts (option maxRetries=2)") {
		t.Errorf("got %v", err)
	}
	if got := fake.Requests() - start; got != 3 {
		t.Errorf("%d requests, want 3", got)
	}

	// A Retry-After beyond maxRetryWait fails at once.
	set("later", 1, 120)
	t0 = time.Now()
	_, err = send(t, producer(t, comp, base+"&maxRetryWait=5s"), "later")
	if err == nil || !strings.Contains(err.Error(), "waiting would exceed option maxRetryWait=5s") {
		t.Errorf("got %v", err)
	}
	if d := time.Since(t0); d > 60*time.Second { // waiting would take 120s
		t.Errorf("waited %s before failing", d)
	}

	// A cancelled exchange stops the wait.
	set("cancel", 1, 30)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- producer(t, comp, base).Process(ctx, exchange.NewWithBody(exchange.InOnly, "cancel")) }()
	for fake.Requests() == 0 || func() bool { mu.Lock(); defer mu.Unlock(); return limited["cancel"] > 0 }() {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancelled while waiting 30s to retry") {
			t.Errorf("got %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Process kept waiting after its context was cancelled")
	}

	// An exchange deadline shorter than the Retry-After fails without waiting.
	set("deadline", 1, 30)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = producer(t, comp, base).Process(ctx, exchange.NewWithBody(exchange.InOnly, "deadline"))
	if err == nil || !strings.Contains(err.Error(), "waiting would exceed the exchange's deadline") {
		t.Errorf("got %v", err)
	}
}

// Webhook mode: the message goes to the webhook as JSON; the webhook's error codes
// and 429s are handled as the Web API's; the URL (a secret) is never shown.
func TestWebhook(t *testing.T) {
	fake, comp := newFake(t)
	hook := fake.WebhookURL()
	raw := "slack://ops-channel?webhookUrl=" + url.QueryEscape(hook) + "&username=helix"
	var limitedOnce sync.Once
	fake.Before = func(_ context.Context, m slacktest.Message) *slacktest.Fault {
		switch m.Text {
		case "gone":
			return &slacktest.Fault{Status: 404, Error: "no_service"}
		case "busy":
			var f *slacktest.Fault
			limitedOnce.Do(func() { f = slacktest.RateLimited(0) })
			return f
		}
		return nil
	}
	p := producer(t, comp, raw)
	ex, err := send(t, p, "hello webhook")
	if err != nil {
		t.Fatal(err)
	}
	if m := fake.Next(t); m.Via != "webhook" || m.Text != "hello webhook" || m.Username != "helix" || m.Channel != "" {
		t.Errorf("webhook received %+v", m)
	}
	if ex.In().Header(slack.HeaderTs) != nil {
		t.Error("a webhook answers no timestamp, yet HelixSlackTs is set")
	}
	if _, err := send(t, p, "busy"); err != nil {
		t.Fatalf("after one 429: %v", err)
	}
	fake.Next(t)
	_, err = send(t, p, "gone")
	if err == nil || !strings.Contains(err.Error(), "webhook: Slack refused the message (HTTP 404): no_service (the webhook URL does not exist or was revoked)") {
		t.Errorf("got %v", err)
	}
	if err != nil && (strings.Contains(err.Error(), "fakewebhooksecret") || !strings.Contains(err.Error(), "webhookUrl=***")) {
		t.Errorf("the error shows the webhook URL: %v", err)
	}
	// A webhook that is not there: the transport error does not show the URL either.
	fake.Close()
	_, err = send(t, p, "into the void")
	if err == nil || strings.Contains(err.Error(), "fakewebhooksecret") || !strings.Contains(err.Error(), "webhook: request to Slack failed") {
		t.Errorf("got %v", err)
	}
}

// Credentials come from the options or, with neither, from SLACK_BOT_TOKEN or
// SLACK_WEBHOOK_URL; mistakes are refused when the endpoint is built, secrets unshown.
func TestEndpointErrors(t *testing.T) {
	comp := slack.New(nil)
	build := func(raw string) error {
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		_, err = comp.CreateEndpoint(u)
		return err
	}
	t.Setenv(slack.EnvBotToken, "")
	t.Setenv(slack.EnvWebhookURL, "")
	for raw, want := range map[string]string{
		"slack://ops": "no Slack credentials: set the environment variable SLACK_BOT_TOKEN",
		"slack://ops?token=a&webhookUrl=https://h/x":      "give token or webhookUrl, not both",
		"slack://ops?token=":                              "option token is empty",
		"slack://ops?webhookUrl=not-a-url-" + token:       "webhookUrl is not an http(s) URL (the value is secret and not shown)",
		"slack://?token=" + token:                         "no channel: write it as slack://ops-channel",
		"slack://ops/extra?token=" + token:                `"ops/extra" is not a channel`,
		"slack://ops?tokn=" + token:                       `unknown option "tokn" (did you mean "token"?)`,
		"slack://ops?token=" + token + "&maxRetries=-1":   "option maxRetries=-1 must be 0 or more",
		"slack://ops?token=" + token + "&timeout=0s":      "option timeout=0s must be positive",
		"slack://ops?token=" + token + "&apiUrl=ftp://x/": `apiUrl "ftp://x/" is not an http(s) URL`,
	} {
		err := build(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", raw, err, want)
		}
		if err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("%s: the error shows the token: %v", raw, err)
		}
	}
	// A webhook needs no channel.
	if err := build("slack://?webhookUrl=https://hooks.example/x"); err != nil {
		t.Error(err)
	}
	t.Setenv(slack.EnvWebhookURL, "https://hooks.example/x")
	if err := build("slack://ops"); err != nil {
		t.Errorf("with SLACK_WEBHOOK_URL: %v", err)
	}
	t.Setenv(slack.EnvBotToken, token)
	u, _ := uri.Parse("slack://ops?token=" + token)
	ep, err := comp.CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ep.URI(), token) || ep.URI() != "slack://ops?token=***" {
		t.Errorf("URI() = %s", ep.URI())
	}
	_, err = ep.CreateConsumer(component.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return nil }))
	if !errors.Is(err, component.ErrProducerOnly) || !strings.Contains(err.Error(), "cannot trigger a workflow") {
		t.Errorf("CreateConsumer: %v", err)
	}
}

// SLACK_BOT_TOKEN is used when the URI names no credentials (spec §12.2 writes
// slack://ops-channel), and Options.APIURL points the endpoints at another server.
func TestTokenFromEnvironment(t *testing.T) {
	fake, comp := newFake(t)
	t.Setenv(slack.EnvBotToken, token)
	if _, err := send(t, producer(t, comp, "slack://ops-channel"), "from env"); err != nil {
		t.Fatal(err)
	}
	if m := fake.Next(t); m.Text != "from env" || m.Via != "api" {
		t.Errorf("got %+v", m)
	}
	// An apiUrl option wins over Options.APIURL.
	other := slacktest.NewServer(t, token)
	if _, err := send(t, producer(t, comp, "slack://ops-channel?apiUrl="+url.QueryEscape(strings.TrimSuffix(other.APIURL(), "/"))), "other"); err != nil {
		t.Fatal(err)
	}
	if m := other.Next(t); m.Text != "other" {
		t.Errorf("got %+v", m)
	}
}

// Neither the token nor the webhook URL reaches an error or a log line, whatever
// fails: a refused token, a 429 retried and given up, Slack being unreachable.
func TestSecretsNeverShown(t *testing.T) {
	var logs bytes.Buffer
	fake := slacktest.NewServer(t, "xoxb-other")
	comp := slack.New(&slack.Options{APIURL: fake.APIURL(),
		Logger: func() *slog.Logger {
			return slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}})
	t.Cleanup(func() { _ = comp.Stop(context.Background()) })
	hook := fake.WebhookURL()
	fake.Before = func(context.Context, slacktest.Message) *slacktest.Fault { return slacktest.RateLimited(0) }
	var errs []error
	for _, raw := range []string{"slack://ops?token=" + token, "slack://ops?webhookUrl=" + url.QueryEscape(hook)} {
		_, err := send(t, producer(t, comp, raw+"&maxRetries=2"), "x")
		errs = append(errs, err)
	}
	fake.Close()
	for _, raw := range []string{"slack://ops?token=" + token, "slack://ops?webhookUrl=" + url.QueryEscape(hook)} {
		_, err := send(t, producer(t, comp, raw), "x")
		errs = append(errs, err)
	}
	if !strings.Contains(logs.String(), "rate limited") {
		t.Errorf("no retry was logged: %s", logs.String())
	}
	for _, err := range errs {
		if err == nil {
			t.Fatal("a failure was not reported")
		}
		for _, secret := range []string{token, url.QueryEscape(token), "fakewebhooksecret"} {
			if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
				t.Errorf("a secret is shown: error %q, logs %q", err, logs.String())
			}
		}
	}
}
