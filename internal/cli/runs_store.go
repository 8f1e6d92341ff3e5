package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
)

// openRunStore opens the durable store the files name: helix.durable_store, or
// the SQLite file under helix.data_dir (relative to the working directory, as
// helix run has it). Only the files' helix: block is read: the runs of an
// application whose components would not build (a missing secret) can still be
// inspected. The runtime it opens is never launched: it runs no workflow, and
// recovers nothing of the instance whose store it opened.
func openRunStore(cmd *cobra.Command, files []string) (durable.Runs, func(), error) {
	logger, err := newLogger(cmd, "warn")
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.Load(files...)
	if err != nil {
		return nil, nil, printConfigErrors(cmd.ErrOrStderr(), err)
	}
	opts := durable.OptionsFor(cfg.Helix, logger)
	if opts.Store == "" {
		path := durable.EmbeddedStorePath(opts.DataDir)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil, configError(fmt.Errorf("no durable store at %s: no durable run was ever started with these files here "+
				"(run helix runs from the directory helix run runs in, or check helix.data_dir)", path))
		}
	}
	// DBOS keeps the context it is opened with for everything it does later:
	// the command's own, not one that ends after opening.
	rt, err := durable.New(cmd.Context(), opts)
	if err != nil {
		return nil, nil, runtimeError(fmt.Errorf("open the durable store: %w", err))
	}
	return rt, func() { rt.Shutdown(5 * time.Second) }, nil
}
