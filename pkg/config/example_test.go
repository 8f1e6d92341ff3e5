package config_test

import (
	"fmt"

	"github.com/arvenza/helix/pkg/config"
)

// LoadBytes reads a configuration from memory into the same types a Go program
// can fill itself; the name is the file name of error positions.
func ExampleLoadBytes() {
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
helix:
  mcp:
    servers:
      - enabled: true
        transport: http
        addr: "127.0.0.1:3000"
        name: my-helix-tools
workflows:
  - id: greet
    description: Greet a person by name
    trigger:
      uri: direct://greet
    steps:
      - transform:
          starlang: |
            "Hello, " ++ payload.get("name", "World") ++ "!"
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range cfg.Workflows {
		fmt.Printf("%s: %s, %d step(s), %q\n", w.ID, w.From, len(w.Steps), w.Description)
	}
	for _, s := range cfg.Helix.MCP.Servers {
		fmt.Println(s.Name, s.Transport, s.Addr)
	}
	// Output:
	// greet: direct://greet, 1 step(s), "Greet a person by name"
	// my-helix-tools http 127.0.0.1:3000
}

// A mistake is reported at its position with a hint; the error is config.Errors,
// one config.Error per problem.
func ExampleLoadBytes_error() {
	_, err := config.LoadBytes("helix.yaml", []byte(`
workflows:
  - id: greet
    trigger:
      uri: direct://greet
    stepz: []
`))
	if problems, ok := err.(config.Errors); ok {
		for _, p := range problems {
			fmt.Println(p.Pos, p.Path)
		}
		fmt.Println(problems[0].Msg != "" && problems[0].Hint != "")
	}
	// Output:
	// helix.yaml:6:5 workflows[0]
	// true
}
