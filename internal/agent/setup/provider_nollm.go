//go:build helix_nollm

package setup

// This build leaves the OpenAI and Anthropic SDKs out: agents using them are
// refused at validation, naming the tag.
func init() {
	providers.LeftOut(ProviderOpenAI, "helix_nollm")
	providers.LeftOut(ProviderAnthropic, "helix_nollm")
}
