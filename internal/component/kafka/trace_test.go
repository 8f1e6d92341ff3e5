package kafka

import (
	"reflect"
	"testing"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// A record's exchange gets a messaging consumer span; the topic comes from the
// record header, else from the trigger URI.
func TestTraceInfo(t *testing.T) {
	u, _ := uri.Parse("kafka://orders?groupId=g")
	ex := exchange.NewWithBody(exchange.InOut, "x")
	ex.In().SetHeader(HeaderTopic, "orders-eu")
	base := []component.KeyValue{{Key: "messaging.system", Value: "kafka"}, {Key: "messaging.operation.type", Value: "process"}}
	want := component.TraceInfo{Kind: component.SpanConsumer,
		Attributes: append(append([]component.KeyValue{}, base...), component.KeyValue{Key: "messaging.destination.name", Value: "orders-eu"})}
	if got := Spec.Trace(ex, u); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	want.Attributes = append(append([]component.KeyValue{}, base...), component.KeyValue{Key: "messaging.destination.name", Value: "orders"})
	if got := Spec.Trace(exchange.NewWithBody(exchange.InOut, "x"), u); !reflect.DeepEqual(got, want) {
		t.Errorf("without the header: got %+v, want %+v", got, want)
	}
	if !Spec.FreshExchanges {
		t.Error("kafka:// records do not start fresh exchanges")
	}
}
