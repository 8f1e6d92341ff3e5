package cli

import (
	"github.com/spf13/cobra"

	"github.com/arvenza/helix/internal/step"
)

// schemaFile is the checked-in copy of `helix schema`, relative to the repository
// root; a test fails when it is stale.
const schemaFile = "docs/helix.schema.json"

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of Helix YAML files (for editors' YAML language servers)",
		Long: `Print the JSON Schema (draft 2020-12) of a Helix YAML file: helix: settings, workflows,
tools, agents, pipelines, mcps and every step kind, generated from the declarations the
loader itself uses. Point an editor's YAML language server at it for completion and
checks while typing; ` + "`helix validate`" + ` remains the full check (URIs, Starlang, ids).
The same schema is checked in as ` + schemaFile + `.`,
		Example: `  helix schema > helix.schema.json
  # then, first line of a Helix file:
  # yaml-language-server: $schema=./helix.schema.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := step.JSONSchema()
			if err != nil {
				return runtimeError(err)
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
}
