package step

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func init() {
	priority := func(what string) config.Shape {
		return config.Shape{Type: config.TypeNumber, Min: config.Bound(0), Max: config.Bound(1),
			Description: "How much " + what + " matters to the choice of model, from 0 to 1."}
	}
	Define(Kind{
		Name: "sample",
		Description: "Asks the language model of the MCP client that called the workflow for a message (sampling/createMessage) and waits for it. " +
			"The answer's text becomes the body (an image or audio answer: its bytes, with header Content-Type); headers HelixSampleModel and HelixSampleStopReason say which model answered and why it stopped. " +
			"Works only in workflows called as MCP tools by a client that supports sampling (asked as elicit: asks, by a request or, on MCP 2026-07-28, an input request). `sample: \"text\"` is short for `sample: {prompt: \"text\"}`.",
		Shape: config.Shape{Type: config.TypeObject, What: "a sample step", Short: "prompt", Keys: []config.Key{
			{Name: "prompt", Shape: config.Shape{Type: config.TypeString,
				Description: "The user message, with ${…} placeholders resolved. Without prompt: and messages: the body is the user message (text as is, anything else as JSON)."}},
			{Name: "messages", Shape: config.Shape{Type: config.TypeList, Description: "The conversation so far, instead of prompt:.",
				Items: &config.Shape{Type: config.TypeObject, What: "a sampling message", Keys: []config.Key{
					{Name: "role", Shape: config.Shape{Type: config.TypeString, Default: "user", Enum: []string{"user", "assistant"}, Description: "Who said it."}},
					{Name: "text", Required: true, Shape: config.Shape{Type: config.TypeString, Description: "What was said, with ${…} placeholders resolved."}},
				}}}},
			questionIDKey(),
			{Name: "system_prompt", Shape: config.Shape{Type: config.TypeString, Description: "The system prompt the server asks for, with ${…} placeholders resolved; the client may ignore it."}},
			{Name: "max_tokens", Shape: config.Shape{Type: config.TypeInt, Default: 1024, Min: config.Bound(1), Description: "The most tokens the model may answer with."}},
			{Name: "temperature", Shape: config.Shape{Type: config.TypeNumber, Min: config.Bound(0), Max: config.Bound(2),
				Description: "Sampling temperature; absent (or 0) leaves it to the client."}},
			{Name: "model_preferences", Shape: config.Shape{Type: config.TypeObject, What: "model preferences", Description: "Hints for the client's choice of model.", Keys: []config.Key{
				{Name: "hints", Shape: config.Shape{Type: config.TypeList, Items: &config.Shape{Type: config.TypeString},
					Description: "Model names or families, in order of preference (claude-3-5-sonnet, sonnet …)."}},
				{Name: "cost_priority", Shape: priority("low cost")},
				{Name: "speed_priority", Shape: priority("speed")},
				{Name: "intelligence_priority", Shape: priority("capability")},
			}}},
			{Name: "include_context", Shape: config.Shape{Type: config.TypeString, Enum: []string{"none", "thisServer", "allServers"},
				Description: "Which MCP context the client should add to the prompt."}},
			{Name: "stop_sequences", Shape: config.Shape{Type: config.TypeList, Items: &config.Shape{Type: config.TypeString},
				Description: "Texts that end the answer."}},
			askTimeoutKey(),
			askIntoKey("the answer", "the answer becomes"),
		}},
		Build: buildSample,
	})
}

// sampleStep asks the calling MCP client's model for a message:
//
//	steps:
//	  - sample: {prompt: "Summarize: ${body}", max_tokens: 200}
type sampleStep struct {
	name string
	askSettings
	prompt   string
	messages []ask.Message // texts hold unresolved placeholders
	system   string
	q        ask.Sampling // the fixed parts of the request
}

var _ ask.Asker = (*sampleStep)(nil)

func buildSample(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &sampleStep{name: Name(s), prompt: v.String("prompt"), system: v.String("system_prompt")}
	st.askSettings = decodeAskSettings(d, v, st.name, "answer")
	st.q.ID = st.id
	CheckPlaceholders(d, v.NodeOf("prompt"), v.PathOf("prompt"), st.prompt)
	CheckPlaceholders(d, v.NodeOf("system_prompt"), v.PathOf("system_prompt"), st.system)
	for _, m := range v.Objects("messages") {
		role := m.String("role")
		if role == "" {
			role = "user"
		}
		text := m.String("text")
		CheckPlaceholders(d, m.NodeOf("text"), m.PathOf("text"), text)
		st.messages = append(st.messages, ask.Message{Role: role, Text: text})
	}
	if v.Has("prompt") && v.Has("messages") {
		d.Errorf(v.NodeOf("messages"), v.PathOf("messages"), "a sample step has prompt: or messages:, not both").Hint = "put the prompt as the last user message"
	}
	if v.Has("messages") && len(st.messages) == 0 {
		d.Errorf(v.NodeOf("messages"), v.PathOf("messages"), "messages: must list at least one message")
	}
	st.q.MaxTokens = int64(v.Int("max_tokens"))
	if st.q.MaxTokens <= 0 {
		st.q.MaxTokens = 1024
	}
	if v.Has("temperature") {
		t := v.Float("temperature")
		st.q.Temperature = &t
	}
	st.q.IncludeContext = v.String("include_context")
	st.q.StopSequences = stringList(v.Get("stop_sequences"))
	if mp := v.Object("model_preferences"); mp != nil {
		p := &ask.ModelPreferences{Hints: stringList(mp.Get("hints"))}
		for key, dst := range map[string]**float64{"cost_priority": &p.CostPriority, "speed_priority": &p.SpeedPriority, "intelligence_priority": &p.IntelligencePriority} {
			if mp.Has(key) {
				f := mp.Float(key)
				*dst = &f
			}
		}
		st.q.ModelPreferences = p
	}
	return st, d.Err()
}

// stringList returns the strings of a decoded list value.
func stringList(v *config.Value) []string {
	if v == nil {
		return nil
	}
	l, _ := v.V.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (s *sampleStep) Name() string     { return s.name }
func (s *sampleStep) AsksClient() bool { return true }

func (s *sampleStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	c := ask.FromContext(ctx)
	if c == nil {
		return fmt.Errorf("sample: %w", ask.ErrNoClient)
	}
	q := s.q
	var err error
	if q.SystemPrompt, err = uri.Expand(s.system, ex); err != nil {
		return fmt.Errorf("sample: system_prompt: %w", err)
	}
	switch {
	case len(s.messages) > 0:
		q.Messages = make([]ask.Message, len(s.messages))
		for i, m := range s.messages {
			text, err := uri.Expand(m.Text, ex)
			if err != nil {
				return fmt.Errorf("sample: messages[%d]: %w", i, err)
			}
			q.Messages[i] = ask.Message{Role: m.Role, Text: text}
		}
	case s.prompt != "":
		text, err := uri.Expand(s.prompt, ex)
		if err != nil {
			return fmt.Errorf("sample: prompt: %w", err)
		}
		q.Messages = []ask.Message{{Role: "user", Text: text}}
	default:
		text, err := bodyAsText(ex.In().Body())
		if err != nil {
			return fmt.Errorf("sample: the body as the prompt: %w", err)
		}
		q.Messages = []ask.Message{{Role: "user", Text: text}}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ans, err := c.Sample(ctx, &q)
	if err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	in := ex.In()
	in.SetHeader(HeaderSampleModel, ans.Model)
	in.SetHeader(HeaderSampleStopReason, ans.StopReason)
	var out any = ans.Message.Text
	if ans.Message.Data != nil {
		out = ans.Message.Data
	}
	if s.into != "" {
		ex.SetVariable(s.into, out)
		return nil
	}
	in.SetBody(out)
	if ans.Message.Data != nil {
		in.SetHeader(exchange.HeaderContentType, ans.Message.MIMEType)
	}
	return nil
}

// bodyAsText is a body as a prompt: text as is, bytes as text, anything else as
// JSON.
func bodyAsText(body any) (string, error) {
	switch b := body.(type) {
	case nil:
		return "", nil
	case string:
		return b, nil
	case []byte:
		return string(b), nil
	}
	out, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	return string(out), nil
}
