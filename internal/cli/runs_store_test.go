package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// approveProc parks its durable run until it is resolved, then appends the
// resolution to the body.
type approveProc struct{}

func (approveProc) Name() string { return "w.yaml:4:5 approve" }
func (approveProc) Process(ctx context.Context, ex *exchange.Exchange) error {
	r, ok := durable.ResolutionFrom(ctx)
	if !ok {
		return durable.Park(durable.Wait{Kind: durable.WaitApprove, Key: "q1", Message: "ship it?"})
	}
	ex.In().SetBody(fmt.Sprint(ex.In().Body(), "+", r.Kind, " by ", r.By))
	return nil
}

// helix runs on the store of a running application: list and show the parked
// run, approve it (the application runs the rest), show it completed.
func TestRunsOnARealStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	file := filepath.Join(dir, "helix.yaml")
	if err := os.WriteFile(file, []byte("helix:\n  name: shop\n  data_dir: "+data+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := execute(t, "runs", "list", file)
	if code != ExitConfig || !strings.Contains(errs, "no durable store at "+filepath.Join(data, "durable.db")) {
		t.Fatalf("no store yet: exit %d %q", code, errs)
	}
	runsOnStore(t, file, durable.Options{AppName: "shop", DataDir: data})
}

// The same on a PostgreSQL store, as replicas share it.
func TestRunsOnAPostgresStore(t *testing.T) {
	t.Parallel()
	db := testtools.PostgresDatabase(t)
	file := filepath.Join(t.TempDir(), "helix.yaml")
	if err := os.WriteFile(file, []byte("helix:\n  name: shop\n  durable_store: "+db+"\n  replica_id: cli-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runsOnStore(t, file, durable.Options{AppName: "shop", Store: db, ReplicaID: "app"})
}

func runsOnStore(t *testing.T, file string, opts durable.Options) {
	t.Helper()
	ec := engine.NewContext("shop")
	if err := ec.AddWorkflow(&engine.Workflow{ID: "orders", Processors: []engine.Processor{approveProc{}}, Durable: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := durable.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	ec.SetDurableRunner(rt)
	if err := ec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Launch(ec); err != nil {
		t.Fatal(err)
	}
	defer func() { rt.Shutdown(time.Second); _ = ec.Stop(ctx) }()
	ex := exchange.NewWithBody(exchange.InOut, "order 7")
	if err := ec.Run(ctx, "orders", ex); err != nil {
		t.Fatal(err)
	}
	id, _ := ex.In().Body().(map[string]any)["run_id"].(string)

	code, out, errs := execute(t, "runs", "list", file, "--state", "input_required")
	if code != ExitOK || !strings.Contains(out, id) || !strings.Contains(out, `approve "ship it?"`) {
		t.Fatalf("list: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = execute(t, "runs", "approve", file, id, "--by", "ann")
	if code != ExitOK || !strings.Contains(out, "run "+id+": approved") {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errs)
	}
	run, err := rt.Await(ctx, id)
	if err != nil || run.State != durable.StateCompleted {
		t.Fatalf("after approval: %+v %v", run, err)
	}
	code, out, errs = execute(t, "runs", "show", file, id)
	if code != ExitOK || !strings.Contains(out, "completed") ||
		!strings.Contains(out, "approved by ann") || !strings.Contains(out, "w.yaml:4:5 approve") {
		t.Fatalf("show: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = execute(t, "runs", "approve", file, id)
	if code != ExitRuntime || !strings.Contains(errs, "has ended (completed)") {
		t.Fatalf("approve twice: exit %d %q", code, errs)
	}
}
