package timer

import "github.com/arvenza/helix/pkg/component"

// Headers of the exchanges a timer fires.
const (
	// HeaderName holds the timer's name (tick in timer://tick).
	HeaderName = "HelixTimerName"
	// HeaderCounter holds the 1-based number of the firing (int).
	HeaderCounter = "HelixTimerCounter"
)

// Spec is the timer:// component's description: options, headers, direction.
var Spec = &component.Spec{
	Scheme:    "timer",
	Summary:   "fire exchanges on a schedule",
	Direction: component.ConsumerOnly,
	Syntax:    "timer://name[?options]",
	Description: `A trigger that fires InOnly exchanges without a body, like Apache Camel's timer.
The schedule is fixed-delay: period counts from the end of one exchange to the next
firing, so a slow workflow pushes the next firing back instead of piling exchanges up.
A failed exchange is logged (nobody waits for it) and the timer goes on.

With helix.cluster.leader set, the timer fires on the elected leader only (docs/scaling.md);
HelixTimerCounter then counts the firings since this replica became leader.`,
	Path: []component.PathPart{
		{Name: "name", Required: true, Description: "names the timer; it is the value of the HelixTimerName header"},
	},
	Options: []component.Option{
		{Name: "period", Type: component.TypeDuration, Default: "1s", Role: component.ConsumerOnly, Since: "0.1",
			Description: "time between the end of one exchange and the next firing; must be positive unless repeatCount=1"},
		{Name: "delay", Type: component.TypeDuration, Default: "1s", Role: component.ConsumerOnly, Since: "0.1",
			Description: "wait before the first firing; 0 fires at once"},
		{Name: "repeatCount", Type: component.TypeInt, Default: "0", Role: component.ConsumerOnly, Since: "0.1",
			Description: "stop after this many firings; 0 fires until the workflow stops"},
	},
	Headers: []component.Header{
		{Name: HeaderName, Type: "string", Use: component.Writes, Role: component.ConsumerOnly, Description: "the timer's name"},
		{Name: HeaderCounter, Type: "int", Use: component.Writes, Role: component.ConsumerOnly, Description: "the number of this firing, from 1"},
	},
	Examples: []component.Example{
		{URI: "timer://tick?period=5s", Description: "fire every five seconds, the first time after one second"},
		{URI: "timer://once?delay=0&repeatCount=1", Description: "fire once, at start"},
	},
	Since:          "0.1",
	Singleton:      true,
	FreshExchanges: true,
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
