package config

// The values of rate_limit_store_fallback.
const (
	// RateLimitFallbackLocal decides a request with this process's own buckets
	// while the shared store cannot answer (the default).
	RateLimitFallbackLocal = "local"
	// RateLimitFallbackRefuse answers 503 while the shared store cannot answer.
	RateLimitFallbackRefuse = "refuse"
)
