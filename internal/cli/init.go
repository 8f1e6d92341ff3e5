package cli

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/arvenza/helix/internal/config"
)

// templates are the starter files of `helix init`, one per --template. Each has a
// tests: list that passes offline (TestInitTemplatesValidateAndPassTheirTests).
//
//go:embed templates/*.yaml
var templates embed.FS

// templateNames are the templates in the order the help lists them; the first is
// the default.
var templateNames = []string{"webhook", "mcp-tools", "agent", "rag"}

var templateSummaries = map[string]string{
	"webhook":   "an HTTP endpoint whose workflow answers with JSON",
	"mcp-tools": "typed tools served to AI assistants over MCP",
	"agent":     "an LLM agent using a workflow as its tool",
	"rag":       "search over a folder of documents, as an MCP tool and over HTTP",
}

func newInitCmd() *cobra.Command {
	var (
		template string
		force    bool
	)
	var help strings.Builder
	for _, name := range templateNames {
		fmt.Fprintf(&help, "  %-10s %s\n", name, templateSummaries[name])
	}
	cmd := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a starter helix.yaml, with its tests",
		Long: `Init writes a starter configuration to FILE (default helix.yaml) from a template:

` + help.String() + `
Each one validates, and passes its own tests (helix test FILE) offline. An existing
file is kept unless --force is given.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := "helix.yaml"
			if len(args) == 1 {
				file = args[0]
			}
			content, err := templateContent(template)
			if err != nil {
				return configError(err)
			}
			if err := writeNew(file, content, force); err != nil {
				return configError(err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "wrote %s (%s template: %s)\n\nnext:\n", file, template, templateSummaries[template])
			fmt.Fprintf(out, "  helix test %s    # run the tests at the end of the file\n", file)
			fmt.Fprintf(out, "  helix run %s     # start it; the comments at the top say how to call it\n", file)
			return nil
		},
	}
	cmd.Flags().StringVar(&template, "template", templateNames[0], "the starter: "+strings.Join(templateNames, ", "))
	cmd.Flags().BoolVar(&force, "force", false, "overwrite FILE if it exists")
	return cmd
}

func templateContent(name string) ([]byte, error) {
	known := false
	for _, n := range templateNames {
		known = known || n == name
	}
	if !known {
		msg := fmt.Sprintf("unknown template %q", name)
		if hint := config.DidYouMean(name, templateNames); hint != "" {
			msg += " (" + hint + ")"
		}
		return nil, fmt.Errorf("%s: use %s or %s", msg, strings.Join(templateNames[:len(templateNames)-1], ", "), templateNames[len(templateNames)-1])
	}
	return templates.ReadFile("templates/" + name + ".yaml")
}

// writeNew writes content to file; an existing file is an error unless force.
// O_EXCL makes the check and the creation one step.
func writeNew(file string, content []byte, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(file, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		if st, serr := os.Stat(file); serr == nil && st.IsDir() {
			return fmt.Errorf("%s is a directory: give the name of the file to write, e.g. %s/helix.yaml", file, strings.TrimSuffix(file, "/"))
		}
		return fmt.Errorf("%s already exists: keep it, choose another name (helix init FILE), or use --force to overwrite it", file)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
