// Package deps pins the project's third-party modules while the packages that use
// them are being written; it is removed once every module has a real importer.
package deps

import (
	_ "github.com/golang-jwt/jwt/v5"
	_ "github.com/google/jsonschema-go/jsonschema"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/spf13/cobra"
	_ "go.starlark.net/starlark"
	_ "go.uber.org/goleak"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/oauth2/clientcredentials"
	_ "golang.org/x/time/rate"
)
