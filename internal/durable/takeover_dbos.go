package durable

import (
	"context"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

// DBOSPending is [PendingRuns] on DBOS's public management API: the executions
// in progress are DBOS's PENDING workflows (a parked run's segment has ended,
// SUCCESS; a queued one is ENQUEUED and any replica dequeues it), and handing them
// back is dbos.ResumeWorkflows, which puts them on DBOS's internal queue with no
// owner.
type DBOSPending struct{ Client dbos.Client }

// Pending lists the PENDING workflows by executor id.
func (p DBOSPending) Pending(context.Context) (map[string][]string, error) {
	ws, err := dbos.ListWorkflows(p.Client, dbos.WithFilterStatus(dbos.WorkflowStatusPending),
		dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, w := range ws {
		out[w.ExecutorID] = append(out[w.ExecutorID], w.ID)
	}
	return out, nil
}

// Resume hands the workflows back to the queue.
func (p DBOSPending) Resume(_ context.Context, ids []string) error {
	_, err := dbos.ResumeWorkflows[any](p.Client, ids)
	return err
}
