package config

// ConsoleConfig is `helix.console`: the web console on the management
// listener (internal/console). Enabled nil means the default: on when the
// management address is loopback, off elsewhere.
type ConsoleConfig struct {
	Enabled *bool
	// Auth is who may use the console besides the one-time link printed at
	// start (loopback only): API keys with names and roles, and OAuth bearer
	// tokens (the MCP server's forms). A user is a viewer unless their roles
	// hold "operator".
	Auth ConsoleAuth
	// Capture bounds what the console keeps of exchanges for its live feed
	// and exchange pages.
	Capture ConsoleCapture
	Pos     Pos
}

// ConsoleAuth is `helix.console.auth`.
type ConsoleAuth struct {
	// APIKeys and APIKeyPrincipals as in [Security] (same index); a key
	// written as a plain string is a viewer named after its position.
	APIKeys          []string
	APIKeyPrincipals []APIKeyPrincipal
	OAuth            *OAuthConfig
	Pos              Pos
}

// ConsoleCapture is `helix.console.capture`.
type ConsoleCapture struct {
	// Sample is the share of exchanges captured step by step (0 < s ≤ 1);
	// 0 means the default.
	Sample float64
	// MaxBytes is the memory the capture may hold (max_bytes: 64MiB); 0
	// means the default.
	MaxBytes int64
	Pos      Pos
}
