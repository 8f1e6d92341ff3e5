package slack

import "github.com/arvenza/helix/pkg/component"

// Headers the slack:// producer reads and writes.
const (
	// HeaderThreadTs, when set on the exchange, makes the message a reply in the
	// thread of that message timestamp (the threadTs option wins).
	HeaderThreadTs = "HelixSlackThreadTs"
	// HeaderTs receives the timestamp of the posted message (bot token mode), which
	// identifies it: copy it to HelixSlackThreadTs to reply in its thread.
	HeaderTs = "HelixSlackTs"
	// HeaderChannel receives the ID of the channel the message went to (bot token mode).
	HeaderChannel = "HelixSlackChannel"
)

// Environment variables read when a URI gives neither token nor webhookUrl.
const (
	EnvBotToken   = "SLACK_BOT_TOKEN"
	EnvWebhookURL = "SLACK_WEBHOOK_URL"
)

// DefaultAPIURL is the base of Slack's Web API; the apiUrl option and
// [Options].APIURL replace it (a test points it at an httptest server).
const DefaultAPIURL = "https://slack.com/api/"

// Spec is the slack:// component's description: options, headers, direction.
var Spec = &component.Spec{
	Scheme:    "slack",
	Summary:   "post a message to a Slack channel (bot token or incoming webhook)",
	Direction: component.ProducerOnly,
	Syntax:    "slack://channel[?options]",
	Description: `A target that posts the body as a Slack message, with a bot token through the
Web API method chat.postMessage, or to an incoming webhook. The body is not changed,
so a slack:// target or wiretap can sit anywhere in a workflow.

Credentials: the token option (a bot token, xoxb-…) or the webhookUrl option, written
as ${env:NAME}. With neither, the environment variable SLACK_BOT_TOKEN is used, else
SLACK_WEBHOOK_URL; with none of them the endpoint is refused when the workflow is
built (helix validate says so).

The message: a string body is the text, sent as it is (Slack's mrkdwn and <@U123>
mentions work; escape &, < and > yourself where they are meant literally). A map
body with "blocks" is a Block Kit message: the blocks are sent as written, and its
"text" (optional, recommended) is the notification fallback. A map with only "text" is
that text. Any other body (a map, a list, a number) is shown as indented JSON in a code
block. An empty body is an error.

Failures: Slack's ok:false answers fail the exchange with Slack's error code
(channel_not_found, not_in_channel, invalid_auth, missing_scope …) and what to do
about it; tokens and webhook URLs never appear in errors or logs. A 429 answer is
retried after its Retry-After, at most maxRetries times and at most maxRetryWait in
total, and never beyond the exchange's deadline; then the exchange fails.`,
	Path: []component.PathPart{
		{Name: "channel", Required: true, Description: "the channel: its name (ops-channel) or ID (C0123456789); a webhook posts to its own channel and ignores it"},
	},
	Options: []component.Option{
		{Name: "token", Type: component.TypeString, Secret: true, Role: component.ProducerOnly, Since: "0.2",
			Description: "a bot token (xoxb-…), usually ${env:SLACK_BOT_TOKEN}; the bot must be in the channel and have the chat:write scope"},
		{Name: "webhookUrl", Type: component.TypeString, Secret: true, Role: component.ProducerOnly, Since: "0.2",
			Description: "an incoming webhook URL instead of a token, usually ${env:SLACK_WEBHOOK_URL}"},
		{Name: "username", Type: component.TypeString, Role: component.ProducerOnly, Since: "0.2",
			Description: "the name shown as the sender (needs the chat:write.customize scope)"},
		{Name: "iconEmoji", Type: component.TypeString, Role: component.ProducerOnly, Since: "0.2",
			Description: "an emoji shown as the sender's icon, such as :rocket: (needs chat:write.customize)"},
		{Name: "iconUrl", Type: component.TypeString, Role: component.ProducerOnly, Since: "0.2",
			Description: "an image URL shown as the sender's icon (needs chat:write.customize)"},
		{Name: "threadTs", Type: component.TypeString, Role: component.ProducerOnly, Since: "0.2",
			Description: "post as a reply in the thread of this message timestamp; may be a placeholder such as ${header.HelixSlackTs}"},
		{Name: "apiUrl", Type: component.TypeString, Default: DefaultAPIURL, Role: component.ProducerOnly, Since: "0.2",
			Description: "the base URL of Slack's Web API (a proxy, Slack GovSlack, or a test server)"},
		{Name: "timeout", Type: component.TypeDuration, Default: "30s", Role: component.ProducerOnly, Since: "0.2",
			Description: "limit for each request to Slack"},
		{Name: "maxRetries", Type: component.TypeInt, Default: "3", Role: component.ProducerOnly, Since: "0.2",
			Description: "how many times a request rate-limited by Slack (HTTP 429) is retried after its Retry-After; 0 fails at the first 429"},
		{Name: "maxRetryWait", Type: component.TypeDuration, Default: "1m", Role: component.ProducerOnly, Since: "0.2",
			Description: "the longest total wait for retries; a Retry-After beyond it fails the exchange at once"},
	},
	Headers: []component.Header{
		{Name: HeaderThreadTs, Type: "string", Use: component.Reads, Role: component.ProducerOnly,
			Description: "reply in the thread of this message timestamp (the threadTs option wins)"},
		{Name: HeaderTs, Type: "string", Use: component.Writes, Role: component.ProducerOnly,
			Description: "the timestamp (ID) of the posted message; bot token mode only"},
		{Name: HeaderChannel, Type: "string", Use: component.Writes, Role: component.ProducerOnly,
			Description: "the ID of the channel the message went to; bot token mode only"},
	},
	Examples: []component.Example{
		{URI: "slack://ops-channel", Description: "post with the bot token of SLACK_BOT_TOKEN"},
		{URI: "slack://ops-channel?token=${env:SLACK_BOT_TOKEN}&username=helix&iconEmoji=:rocket:", Description: "post with a named token, a sender name and icon"},
		{URI: "slack://alerts?webhookUrl=${env:SLACK_WEBHOOK_URL}", Description: "post to an incoming webhook"},
		{URI: "slack://ops-channel?token=${env:SLACK_BOT_TOKEN}&threadTs=${header.HelixSlackTs}", Description: "reply in the thread of a message posted before"},
	},
	Since: "0.2",
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
