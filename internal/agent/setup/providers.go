package setup

import (
	"net/http"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/registry"
)

// ModelSettings are what a provider needs to build its model: model: of the
// configuration, with the API key resolved and the HTTP client chosen.
type ModelSettings struct {
	Model       string
	APIKey      string
	BaseURL     string
	Temperature *float64
	MaxTokens   int
	HTTPClient  *http.Client
}

// Provider is one model provider of agents.
type Provider struct {
	// APIKeyEnv is the environment variable read when model.api_key is empty.
	APIKeyEnv string
	// New builds the model; it sends nothing.
	New func(ModelSettings) (agent.Model, error)
}

// providers are the model providers linked into this build, filled by the
// registration files (provider_*.go), each guarded by the build tag that leaves
// its SDK out: setup itself imports no provider.
var providers = registry.New[Provider]()
