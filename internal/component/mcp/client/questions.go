package client

import (
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/ask"
)

// ElicitationQuestion is an upstream server's elicitation as a question for an
// ask.Client, within the bounds a hostile server could cross, with an id derived
// from its content: a relay (the gateway) that forwards it to its own caller
// asks as this package's forward policy does, so that the same question asked
// again when the call is made again finds its answer.
func ElicitationQuestion(p *sdk.ElicitParams) (*ask.Elicitation, error) {
	return elicitationQuestion(p)
}

// SamplingQuestion is ElicitationQuestion for sampling/createMessage.
//
//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still offered to servers in the window
func SamplingQuestion(p *sdk.CreateMessageParams) (*ask.Sampling, error) {
	return samplingQuestion(p)
}

// SamplingResult is the answer to a sampling question as the upstream gets it.
//
//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still offered to servers in the window
func SamplingResult(ans *ask.SampleAnswer) *sdk.CreateMessageResult {
	//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still offered to servers in the window
	res := &sdk.CreateMessageResult{Model: ans.Model, StopReason: ans.StopReason, Role: sdk.Role(ans.Message.Role)}
	if res.Role == "" {
		res.Role = "assistant"
	}
	switch {
	case ans.Message.Data == nil:
		res.Content = &sdk.TextContent{Text: ans.Message.Text}
	case strings.HasPrefix(ans.Message.MIMEType, "audio/"):
		res.Content = &sdk.AudioContent{Data: ans.Message.Data, MIMEType: ans.Message.MIMEType}
	default:
		res.Content = &sdk.ImageContent{Data: ans.Message.Data, MIMEType: ans.Message.MIMEType}
	}
	return res
}
