package component

import (
	"context"
	"errors"

	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Processor handles one exchange. It must be safe for concurrent use.
type Processor interface {
	Process(ctx context.Context, ex *exchange.Exchange) error
}

// ProcessorFunc adapts a function to Processor.
type ProcessorFunc func(ctx context.Context, ex *exchange.Exchange) error

// Process calls f.
func (f ProcessorFunc) Process(ctx context.Context, ex *exchange.Exchange) error { return f(ctx, ex) }

// Service is something with a lifecycle.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Component builds endpoints for one scheme.
type Component interface {
	CreateEndpoint(u *uri.URI) (Endpoint, error)
}

// Endpoint is one configured address of a component.
type Endpoint interface {
	URI() string
	// CreateProducer returns a producer, or ErrConsumerOnly.
	CreateProducer() (Producer, error)
	// CreateConsumer returns a consumer that feeds p, or ErrProducerOnly.
	CreateConsumer(p Processor) (Consumer, error)
}

// Producer sends exchanges to the endpoint; for InOut exchanges the reply replaces the body.
type Producer interface {
	Processor
	Service
}

// Consumer receives from the endpoint and hands each exchange to its processor.
type Consumer interface {
	Service
}

// TriggerChecker is implemented by endpoints whose options must say more when the
// endpoint is a workflow's trigger (postgres:// needs query= or channel=).
// Configuration validation calls CheckTrigger for trigger URIs, so the mistake is
// reported at the URI's position before anything starts; it must have no side effects.
type TriggerChecker interface {
	CheckTrigger() error
}

// Direction says which roles a scheme supports; config validation uses it to report
// misuse (an mcp:// trigger, say) before anything starts.
type Direction int

const (
	Both Direction = iota
	ProducerOnly
	ConsumerOnly
)

var (
	// ErrProducerOnly is returned by CreateConsumer of producer-only components.
	ErrProducerOnly = errors.New("this component is producer-only: it can be used as a target, not as a trigger")
	// ErrConsumerOnly is returned by CreateProducer of consumer-only components.
	ErrConsumerOnly = errors.New("this component is consumer-only: it can be used as a trigger, not as a target")
)

// Lifecycle is implemented by components that hold shared state (listeners, sessions)
// across their endpoints. The engine starts components before any endpoint and stops
// them after every endpoint.
type Lifecycle interface {
	Service
}

// NopService is embedded by producers and consumers that need no start/stop work.
type NopService struct{}

func (NopService) Start(context.Context) error { return nil }
func (NopService) Stop(context.Context) error  { return nil }
