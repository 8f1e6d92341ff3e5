package kafka

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/internal/recordstore"
	"github.com/arvenza/helix/pkg/uri"
)

// A record store sends each record with its id as the key and its JSON as the
// value, and Write returns once the brokers acknowledged them.
func TestRecordStoreSendsKeyedRecords(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.Topic(t, brokers, "audit", 1)
	u, err := uri.Parse("kafka://" + topic + "?brokers=" + strings.Join(brokers, ","))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{}).OpenRecordStore(u, recordstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var batch []recordstore.Record
	for i := range 5 {
		id := fmt.Sprint("r", i)
		batch = append(batch, recordstore.Record{ID: id, JSON: []byte(`{"id":"` + id + `"}`)})
	}
	if err := s.Write(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := kafkatest.Read(t, brokers, topic).WaitCount(t, 5)
	for i, r := range got {
		if want := fmt.Sprint("r", i); string(r.Key) != want || string(r.Value) != `{"id":"`+want+`"}` {
			t.Errorf("record %d: key %q value %s", i, r.Key, r.Value)
		}
	}
	if err := s.Write(context.Background(), batch); err == nil {
		t.Error("a closed store took records")
	}
}

func TestRecordStoreRefusesABadTopic(t *testing.T) {
	u, _ := uri.Parse("kafka://bad%20topic?brokers=localhost:9092&saslPassword=hunter2hunter2")
	_, err := New(Options{}).OpenRecordStore(u, recordstore.Options{})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v: want a refusal without the password", err)
	}
}
