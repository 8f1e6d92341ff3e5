// The benchmark tools: a Go module of its own so that `go test ./...` of Helix does
// not run them and the raw results in bench/results are not part of Helix's module.
// It builds against the Helix of this working tree (replace below). Its requirements
// mirror Helix's go.mod, so the load tool's tests may import any Helix package: when
// Helix gains a dependency, add it here too (go says "updates to go.mod needed").
module github.com/arvenza/helix/bench

go 1.26.8

require github.com/arvenza/helix v0.0.0

require (
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.starlark.net v0.0.0-20260908191801-89a6a09411d5 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/oauth2 v0.38.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.42.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)

replace github.com/arvenza/helix => ../
