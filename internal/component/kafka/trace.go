package kafka

import (
	"strings"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// traceInfo makes the span of a record's exchange a messaging consumer span: the
// system, the operation and the topic the record came from (the trigger's topic
// when the record header is missing).
func traceInfo(ex *exchange.Exchange, trigger *uri.URI) component.TraceInfo {
	info := component.TraceInfo{Kind: component.SpanConsumer, Attributes: []component.KeyValue{
		{Key: "messaging.system", Value: "kafka"},
		{Key: "messaging.operation.type", Value: "process"},
	}}
	topic := ex.In().HeaderString(HeaderTopic)
	if topic == "" {
		topic = strings.Trim(trigger.Host+trigger.Path, "/")
	}
	if topic != "" {
		info.Attributes = append(info.Attributes, component.KeyValue{Key: "messaging.destination.name", Value: topic})
	}
	return info
}
