package app_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/component/slack"
	"github.com/arvenza/helix/internal/component/slack/slacktest"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// A slack:// URI without credentials, or with a misspelled option, is refused when
// the file is validated, at the URI's position; secret values are not shown.
func TestSlackValidation(t *testing.T) {
	t.Setenv(slack.EnvBotToken, "")
	t.Setenv(slack.EnvWebhookURL, "")
	t.Setenv("MY_SLACK_TOKEN", "xoxb-very-secret")
	errs := loadErrors(t, `workflows:
  - id: notify
    trigger: direct://notify
    steps:
      - wiretap: slack://ops-channel
      - target: slack://ops-channel?tokn=${env:MY_SLACK_TOKEN}
      - target: slack://ops-channel?token=${env:MY_SLACK_TOKEN}&webhookUrl=https://hooks.example/x
`)
	want := []string{
		`helix.yaml:5:18: workflows[0].steps[0]: slack://ops-channel: no Slack credentials: set the environment variable SLACK_BOT_TOKEN (a bot token, xoxb-…) or SLACK_WEBHOOK_URL, or give the option token=${env:NAME} or webhookUrl=${env:NAME}`,
		`helix.yaml:6:17: workflows[0].steps[1]: slack://ops-channel?tokn=***: unknown option "tokn" (did you mean "token"?)`,
		`helix.yaml:7:17: workflows[0].steps[2]: slack://ops-channel?token=***&webhookUrl=***: give token or webhookUrl, not both`,
	}
	got := strings.Split(errs.Error(), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), errs.Error())
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
	if strings.Contains(errs.Error(), "very-secret") {
		t.Errorf("a token is shown: %s", errs.Error())
	}
}

// From YAML: a post, then a reply in its thread through ${header.HelixSlackTs}; and a
// wiretap to a Slack that refuses the token logs the failure without the token.
func TestSlackFromYAML(t *testing.T) {
	fake := slacktest.NewServer(t, "xoxb-good")
	t.Setenv("GOOD_TOKEN", "xoxb-good")
	t.Setenv("BAD_TOKEN", "xoxb-bad-s3cret")
	var logs syncBuffer
	opts := quiet
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	opts.Components = map[string]component.Component{"slack": slack.New(&slack.Options{APIURL: fake.APIURL()})}
	cfg, err := config.LoadBytes("helix.yaml", []byte(`workflows:
  - id: rollout
    trigger: direct://rollout
    steps:
      - target: slack://ops-channel?token=${env:GOOD_TOKEN}
      - set-body: "Rollout finished"
      - target: slack://ops-channel?token=${env:GOOD_TOKEN}&threadTs=${header.HelixSlackTs}
      - wiretap: slack://ops-channel?token=${env:BAD_TOKEN}
  - id: broken
    trigger: direct://broken
    steps:
      - target: slack://ops-channel?token=${env:BAD_TOKEN}&apiUrl=ftp://x/&threadTs=${header.T}
`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ex := exchange.NewWithBody(exchange.InOut, "Rollout of api 1.2 started")
	if err := a.Context().Send(ctx, "direct://rollout", ex); err != nil {
		t.Fatal(err)
	}
	first, reply := fake.Next(t), fake.Next(t)
	if first.Text != "Rollout of api 1.2 started" || first.ThreadTs != "" || reply.Text != "Rollout finished" || reply.ThreadTs != first.Ts {
		t.Errorf("Slack received %+v and %+v", first, reply)
	}
	deadline := time.Now().Add(testtools.StartupBound)
	for !strings.Contains(logs.String(), "invalid_auth") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "wiretap: tap failed") || !strings.Contains(logs.String(), "invalid_auth") {
		t.Errorf("the failed tap was not logged: %s", logs.String())
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Errorf("the log shows a token: %s", logs.String())
	}
	// A target built per exchange (it has a placeholder) that cannot be built fails
	// naming the URI with the token hidden.
	err = a.Context().Send(ctx, "direct://broken", exchange.NewWithBody(exchange.InOut, "x"))
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "token=***") || !strings.Contains(err.Error(), `apiUrl "ftp://x/" is not an http(s) URL`) {
		t.Errorf("got %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's and the test's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
