//go:build !helix_nollm

package setup

import (
	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/anthropic"
	"github.com/arvenza/helix/internal/agent/openai"
)

// The OpenAI and Anthropic SDKs; a build with -tags helix_nollm leaves them out
// (provider_nollm.go).
func init() {
	providers.Register(ProviderOpenAI, Provider{APIKeyEnv: "OPENAI_API_KEY", New: func(s ModelSettings) (agent.Model, error) {
		m, err := openai.New(openai.Config{Model: s.Model, APIKey: s.APIKey, BaseURL: s.BaseURL,
			Temperature: s.Temperature, MaxTokens: s.MaxTokens, HTTPClient: s.HTTPClient})
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return m, nil
	}})
	providers.Register(ProviderAnthropic, Provider{APIKeyEnv: "ANTHROPIC_API_KEY", New: func(s ModelSettings) (agent.Model, error) {
		m, err := anthropic.New(anthropic.Config{Model: s.Model, APIKey: s.APIKey, BaseURL: s.BaseURL,
			Temperature: s.Temperature, MaxTokens: s.MaxTokens, HTTPClient: s.HTTPClient})
		if err != nil {
			return nil, err
		}
		return m, nil
	}})
}
