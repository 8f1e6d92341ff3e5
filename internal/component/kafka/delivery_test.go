package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/internal/testtools"
)

// childEnv, when set, makes the test binary a Helix process for TestKillMidStream:
// it runs the configuration files listed in it (separated by os.PathListSeparator)
// until it is killed.
const childEnv = "HELIX_KAFKA_TEST_CHILD"

func TestMain(m *testing.M) {
	if files := os.Getenv(childEnv); files != "" {
		runChild(strings.Split(files, string(os.PathListSeparator)))
		return
	}
	os.Exit(m.Run())
}

func runChild(files []string) {
	a, _, err := loadApp(files)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	if err := a.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "child start:", err)
		os.Exit(3)
	}
	select {} // until killed
}

// committed returns the group's committed offsets of topic, summed over partitions,
// and the sum of the partitions' end offsets.
func committed(t *testing.T, brokers []string, group, topic string) (done, end int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			done += o.At
		}
	})
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	return done, end
}

// TestFailedRecordGoesToDeadLetterThenCommitted: a record the workflow fails on is
// redelivered by the error handler, then sent to the dead letter channel (another
// topic), and its offset is committed — the partition goes on with the next record,
// and a restart does not see the record again.
func TestFailedRecordGoesToDeadLetterThenCommitted(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.Brokers(t)
	in := kafkatest.Topic(t, brokers, "orders", 1)
	dlq := kafkatest.Topic(t, brokers, "orders-dlq", 1)
	out := kafkatest.Topic(t, brokers, "orders-ok", 1)
	group := in + "-group"
	yaml := fmt.Sprintf(`
workflows:
  - id: orders
    trigger:
      uri: kafka://%s?groupId=%s
    error_handler:
      dead_letter_channel: kafka://%s
      default:
        maximum_redeliveries: 2
        redelivery_delay: 1ms
    steps:
      - process:
          starlang: |
            if payload.get("value", 0) < 0:
                fail("value must be non-negative")
            payload
      - target: kafka://%s
`, in, group, dlq, out)
	for i, v := range []int{1, -1, 2, 3} {
		kafkatest.Produce(t, brokers, &kgo.Record{Topic: in, Value: fmt.Appendf(nil, `{"n": %d, "value": %d}`, i, v)})
	}
	dead := kafkatest.Read(t, brokers, dlq)
	ok := kafkatest.Read(t, brokers, out)
	files := []string{writeFile(t, "helix.yaml", yaml), brokersFile(t, brokers)}

	a := startApp(t, files...)
	got := ok.WaitCount(t, 3)
	d := dead.Next(t)
	var body map[string]any
	if err := json.Unmarshal(d.Value, &body); err != nil || body["value"] != float64(-1) {
		t.Fatalf("dead letter value %q, want the failed record's JSON", d.Value)
	}
	if h := header(d, "HelixExceptionMessage"); h != "" {
		t.Errorf("the dead letter record carries Helix's header HelixExceptionMessage=%q; Helix* headers are not sent", h)
	}
	for i, r := range got {
		var m map[string]any
		_ = json.Unmarshal(r.Value, &m)
		if want := []float64{0, 2, 3}[i]; m["n"] != want {
			t.Errorf("record %d on the output: n=%v, want %v (order kept past the failure)", i, m["n"], want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if done, end := committed(t, brokers, group, in); done != end || end != 4 {
		t.Fatalf("after stop the group committed %d of %d records; want all 4, the failed one included", done, end)
	}

	// A restart with the same group starts after the failed record: nothing again.
	startApp(t, files...)
	kafkatest.Produce(t, brokers, &kgo.Record{Topic: in, Value: []byte(`{"n": 4, "value": 4}`)})
	all := ok.WaitCount(t, 4)
	time.Sleep(200 * time.Millisecond) // a wrong consumer would now deliver more
	if n := len(ok.All()); n != 4 || len(dead.All()) != 1 {
		t.Fatalf("after the restart: %d records out (want 4), %d dead letters (want 1): %v", n, len(dead.All()), all)
	}
}

// TestKillMidStream kills a Helix process (SIGKILL, no clean stop, no final commit)
// while it works through a topic, starts another one with the same group, and
// checks that every record reaches the output at least once. The duplicates —
// records finished after the last commit before the kill — are counted and logged;
// docs/kafka.md explains them.
func TestKillMidStream(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Helix processes")
	}
	brokers := kafkatest.Brokers(t)
	in := kafkatest.Topic(t, brokers, "stream", 4)
	out := kafkatest.Topic(t, brokers, "stream-out", 4)
	const n = 2000
	// A slow step (1ms per record, an HTTP echo) keeps the stream going long enough to
	// be killed in the middle.
	var echoed atomic.Int64
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echoed.Add(1)
		time.Sleep(time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.Copy(w, r.Body)
	}))
	t.Cleanup(echo.Close)
	yaml := fmt.Sprintf(`
workflows:
  - id: stream
    trigger:
      uri: kafka://%s?groupId=%s-g&commitInterval=100ms&sessionTimeout=%s
    steps:
      - transform:
          starlang: |
            {"id": payload["id"], "doubled": payload["id"] * 2}
      - target: %s/echo
      - set-header: {name: X-Run, constant: "${env:HELIX_KAFKA_TEST_RUN}"}
      - target: kafka://%s
`, in, in, kafkatest.SessionTimeout(), echo.URL, out)
	files := []string{writeFile(t, "helix.yaml", yaml), brokersFile(t, brokers)}

	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"id": %d}`, i)})
	}
	kafkatest.Produce(t, brokers, recs...)
	outR := kafkatest.Read(t, brokers, out)

	first := startChild(t, files, "first")
	testtools.Eventually(t, "a quarter of the records through the first Helix process", func() bool {
		if first.ProcessState != nil {
			t.Fatal("the first Helix process exited on its own")
		}
		return len(outR.All()) >= n/4
	})
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	committedAtKill, _ := committed(t, brokers, in+"-g", in)

	second := startChild(t, files, "second")
	seen := map[int]int{}
	t.Cleanup(func() {
		if t.Failed() {
			var missing []int
			for i := range n {
				if seen[i] == 0 {
					missing = append(missing, i)
				}
			}
			t.Logf("after the restart %d of %d records reached the output; lost: %v", len(seen), n, missing)
		}
	})
	testtools.Eventually(t, "every record in the output after the restart", func() bool {
		seen = map[int]int{}
		for _, r := range outR.All() {
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatalf("output record %q: %v", r.Value, err)
			}
			seen[int(m["id"].(float64))]++
		}
		return len(seen) == n
	})
	_ = second.Process.Kill()
	_ = second.Wait()
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	all := outR.All()
	total, atKill := len(all), 0 // atKill: output records of the first process
	for _, r := range all {
		if header(r, "X-Run") == "first" {
			atKill++
		}
	}
	if atKill >= n {
		t.Fatalf("the first process finished all %d records before it was killed; the test needs a kill mid-stream", n)
	}
	t.Logf("kill mid-stream: %d records, %d finished by the first process (%d of them committed), %d output records in all, %d duplicates (%.1f%%), none lost",
		n, atKill, committedAtKill, total, dups, 100*float64(dups)/n)
	if total != n+dups {
		t.Fatalf("count mismatch: %d output records, %d unique, %d duplicates", total, len(seen), dups)
	}
	// The duplicates are exactly the records the first process finished after its
	// last commit: the second one starts at the committed offsets.
	if want := int64(atKill) - committedAtKill; int64(dups) != want {
		t.Fatalf("%d duplicates; want %d, the records finished but not committed when the first process died", dups, want)
	}
}

// startChild runs the test binary as a Helix process with files; its output
// records carry the header X-Run: run.
func startChild(t *testing.T, files []string, run string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(files, string(os.PathListSeparator)), "HELIX_KAFKA_TEST_RUN="+run)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// TestAsyncSendFailureReachesErrorHandler: in a workflow triggered by kafka://, a
// kafka:// target does not wait for the broker; when such a send fails (here: a
// topic that does not exist, with autoCreateTopics=false and a short
// deliveryTimeout), the consumed record runs
// through the workflow again with synchronous sends, so the failure reaches the
// error handler and the dead letter channel, and the offset is committed after
// that. The records around it go through in order.
func TestAsyncSendFailureReachesErrorHandler(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.Brokers(t)
	in := kafkatest.Topic(t, brokers, "sendfail", 1)
	out := kafkatest.Topic(t, brokers, "sendfail-out", 1)
	dlq := kafkatest.Topic(t, brokers, "sendfail-dlq", 1)
	group := in + "-group"
	yaml := fmt.Sprintf(`
workflows:
  - id: sendfail
    trigger:
      uri: kafka://%s?groupId=%s
    error_handler:
      dead_letter_channel: kafka://%s
    steps:
      - choice:
          when:
            - starlang: |
                payload.get("lost", False)
              steps:
                - target: kafka://no-such-topic-%s?autoCreateTopics=false&deliveryTimeout=1s
          otherwise:
            steps:
              - target: kafka://%s
`, in, group, dlq, in, out)
	for _, v := range []string{`{"n": 0}`, `{"n": 1, "lost": true}`, `{"n": 2}`} {
		kafkatest.Produce(t, brokers, &kgo.Record{Topic: in, Value: []byte(v)})
	}
	dead := kafkatest.Read(t, brokers, dlq)
	ok := kafkatest.Read(t, brokers, out)
	a := startApp(t, writeFile(t, "helix.yaml", yaml), brokersFile(t, brokers))
	got := ok.WaitCount(t, 2)
	if d := dead.Next(t); !strings.Contains(string(d.Value), `"lost":true`) {
		t.Fatalf("dead letter %q, want the record whose send failed", d.Value)
	}
	if len(got) != 2 || !strings.Contains(string(got[0].Value), `"n":0`) || !strings.Contains(string(got[1].Value), `"n":2`) {
		t.Fatalf("output %q, want n=0 then n=2", [][]byte{got[0].Value, got[len(got)-1].Value})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if done, end := committed(t, brokers, group, in); done != end || end != 3 {
		t.Fatalf("committed %d of %d; want all 3", done, end)
	}
}
