package kafka

import (
	"github.com/arvenza/helix/pkg/component"
)

// Scheme is the URI scheme of the component.
const Scheme = "kafka"

// DefaultBrokers is where endpoints connect when neither the brokers= option nor
// helix.kafka.brokers names a broker.
const DefaultBrokers = "localhost:9092"

// Exchange headers the component reads and writes. The consumer sets them on every
// exchange it creates; the producer reads HeaderKey. Every other record header
// travels as an exchange header of the same name (see [Spec]).
const (
	// HeaderKey is the record key (string). The consumer writes it when the record
	// has a key; the producer uses it as the key of the record it sends (it wins
	// over the key= option).
	HeaderKey = "HelixKafkaKey"
	// HeaderTopic is the topic the record was read from (string).
	HeaderTopic = "HelixKafkaTopic"
	// HeaderPartition is the partition the record was read from (int).
	HeaderPartition = "HelixKafkaPartition"
	// HeaderOffset is the record's offset in its partition (int64).
	HeaderOffset = "HelixKafkaOffset"
	// HeaderTimestamp is the record's timestamp, RFC 3339 with nanoseconds (string).
	HeaderTimestamp = "HelixKafkaTimestamp"
)

// Spec is the kafka:// component's description: options, headers, direction.
var Spec = &component.Spec{
	Scheme:    Scheme,
	Summary:   "consume records from a Kafka topic with a consumer group, or produce records to one",
	Direction: component.Both,
	Syntax:    "kafka://topic[?options]",
	Description: `Built on franz-go. Brokers come from the brokers option, else from
helix.kafka.brokers, else localhost:9092.

**As a trigger** the endpoint joins the consumer group groupId and runs the workflow once
per record, as an InOnly exchange. Records of one partition run one after another, in
offset order; different partitions run at the same time (at most maxConcurrency at once).
An offset is committed only after the workflow finished its record — successfully, or
after the workflow's error handler (redeliveries, dead letter channel) dealt with the
failure — and the records it sent to kafka:// targets were acknowledged; a failure the workflow does not handle is logged with topic, partition and
offset and then committed, so one bad record never blocks its partition. Delivery is
at least once: records that were being processed, or finished but not yet committed,
when a Helix process dies are delivered again after the restart (see docs/kafka.md).
On Stop, and when a rebalance revokes partitions, the records in flight finish and
their offsets are committed before the partitions are given up.

The value becomes the body: with valueFormat=auto (the default) a JSON object or array
becomes a map or list (so a workflow reads payload["subject"]), any other valid UTF-8
value a string, anything else bytes. The key and every record header become exchange
headers (record header values as strings), except record headers whose name starts
with Helix in any letter case: those are dropped, so that a record cannot forge Helix's
own headers (HelixFileName, HelixMcpToolName, HelixKafkaKey …).

**As a target** the endpoint sends the body as one record and waits for the broker's
acknowledgement (acks) — except in a workflow triggered by kafka://, where it goes on at
once and the consumer waits for the acknowledgement before it commits (a send that fails
then runs the record again with waiting sends, so the error handler sees the failure).
The exchange is InOnly: its body and headers are left as they
were, so the endpoint also serves as a wiretap. Strings and bytes are sent as they are,
maps, lists, numbers and bools as JSON, a nil body as a record without value. The key is
the HelixKafkaKey header, else the key option. Exchange headers with string (or byte)
values become record headers, except Helix's own headers (names starting with Helix,
such as HelixKafkaTopic of a record being consumed). Writes are idempotent unless
idempotent=false.`,
	Path: []component.PathPart{
		{Name: "topic", Required: true, Description: "the topic to consume from or produce to; the topic option, when given, replaces it (kafka://deployments?topic=audit-log writes to audit-log)"},
	},
	Options: []component.Option{
		{Name: "brokers", Type: component.TypeString, Role: component.Both, Since: "0.2",
			Description: "seed brokers, host:port separated by commas; default helix.kafka.brokers, else " + DefaultBrokers},
		{Name: "topic", Type: component.TypeString, Role: component.Both, Since: "0.2",
			Description: "the topic, replacing the one in the address"},
		{Name: "clientId", Type: component.TypeString, Default: "helix", Role: component.Both, Since: "0.2",
			Description: "the client id the brokers see in their logs and quotas"},
		{Name: "groupId", Type: component.TypeString, Role: component.ConsumerOnly, Since: "0.2",
			Description: "the consumer group; default helix-TOPIC. Workflows (and Helix processes) with the same group share the topic's partitions; give each independent reader its own group"},
		{Name: "maxConcurrency", Type: component.TypeInt, Default: "0", Role: component.ConsumerOnly, Since: "0.2",
			Description: "how many records run at the same time across partitions (records of one partition always run in order, one at a time); 0 means one per assigned partition"},
		{Name: "autoOffsetReset", Type: component.TypeEnum, Default: "earliest", Enum: []string{"earliest", "latest"}, Role: component.ConsumerOnly, Since: "0.2",
			Description: "where a group without a committed offset starts: the oldest record or only new ones"},
		{Name: "commitInterval", Type: component.TypeDuration, Default: "1s", Role: component.ConsumerOnly, Since: "0.2",
			Description: "how often the offsets of finished records are committed (and always at Stop and before partitions are revoked); a process that dies loses at most this much progress, which is processed again"},
		{Name: "valueFormat", Type: component.TypeEnum, Default: "auto", Enum: []string{"auto", "string", "bytes"}, Role: component.ConsumerOnly, Since: "0.2",
			Description: "how the record value becomes the body: auto decodes JSON objects and arrays into maps and lists and keeps any other value as a string (bytes when it is not UTF-8); string keeps the value as a string; bytes as bytes"},
		{Name: "sessionTimeout", Type: component.TypeDuration, Default: "45s", Role: component.ConsumerOnly, Since: "0.2",
			Description: "how long the group waits for a silent member before giving its partitions to others"},
		{Name: "key", Type: component.TypeString, Role: component.ProducerOnly, Since: "0.2",
			Description: "the record key when the exchange has no HelixKafkaKey header; records with the same key go to the same partition"},
		{Name: "acks", Type: component.TypeEnum, Default: "all", Enum: []string{"all", "leader", "none"}, EnumAliases: map[string]string{"-1": "all", "1": "leader", "0": "none"}, Role: component.ProducerOnly, Since: "0.2",
			Description: "which brokers must have the record before the send succeeds: all in-sync replicas, the leader only, or none (leader and none need idempotent=false)"},
		{Name: "idempotent", Type: component.TypeBool, Default: "true", Role: component.ProducerOnly, Since: "0.2",
			Description: "idempotent writes: a retried send is never written twice; needs acks=all"},
		{Name: "deliveryTimeout", Type: component.TypeDuration, Default: "30s", Role: component.ProducerOnly, Since: "0.2",
			Description: "how long a record may take to be acknowledged, retries included, before its send fails (and the workflow's error handler takes over)"},
		{Name: "linger", Type: component.TypeDuration, Default: "0s", Role: component.ProducerOnly, Since: "0.2",
			Description: "how long a partition's batch waits for more records before it is sent"},
		{Name: "autoCreateTopics", Type: component.TypeBool, Default: "true", Role: component.ProducerOnly, Since: "0.2",
			Description: "ask the brokers to create a missing topic (when the brokers allow it)"},
		{Name: "saslMechanism", Type: component.TypeEnum, Enum: []string{"plain", "scram-sha-256", "scram-sha-512"}, Role: component.Both, Since: "0.2",
			Description: "authenticate with SASL using this mechanism and saslUsername/saslPassword"},
		{Name: "saslUsername", Type: component.TypeString, Role: component.Both, Since: "0.2",
			Description: "the SASL user"},
		{Name: "saslPassword", Type: component.TypeString, Secret: true, Role: component.Both, Since: "0.2",
			Description: "the SASL password; write it as ${env:NAME}"},
		{Name: "tls", Type: component.TypeBool, Default: "false", Role: component.Both, Since: "0.2",
			Description: "connect with TLS (implied by the other tls options)"},
		{Name: "tlsCaFile", Type: component.TypeString, Role: component.Both, Since: "0.2",
			Description: "PEM file of the certificate authorities that sign the brokers' certificates; default the system's"},
		{Name: "tlsCertFile", Type: component.TypeString, Role: component.Both, Since: "0.2",
			Description: "PEM client certificate for mutual TLS (with tlsKeyFile)"},
		{Name: "tlsKeyFile", Type: component.TypeString, Role: component.Both, Since: "0.2",
			Description: "PEM private key of tlsCertFile"},
		{Name: "tlsInsecureSkipVerify", Type: component.TypeBool, Default: "false", Role: component.Both, Since: "0.2",
			Description: "do not verify the brokers' certificates (tests only)"},
	},
	Headers: []component.Header{
		{Name: HeaderKey, Type: "string", Use: component.ReadsWrites, Role: component.Both,
			Description: "the record key: written by the consumer when the record has one; the producer's key (wins over key=)"},
		{Name: HeaderTopic, Type: "string", Use: component.Writes, Role: component.ConsumerOnly,
			Description: "the topic the record came from"},
		{Name: HeaderPartition, Type: "int", Use: component.Writes, Role: component.ConsumerOnly,
			Description: "the record's partition"},
		{Name: HeaderOffset, Type: "int", Use: component.Writes, Role: component.ConsumerOnly,
			Description: "the record's offset"},
		{Name: HeaderTimestamp, Type: "string", Use: component.Writes, Role: component.ConsumerOnly,
			Description: "the record's timestamp, RFC 3339"},
		{Name: "*", Type: "string", Use: component.ReadsWrites, Role: component.Both,
			Description: "record headers: the consumer copies each onto the exchange (value as a string), except names starting with Helix in any letter case, which it drops; the producer sends every exchange header with a string or bytes value whose name does not start with Helix"},
	},
	Examples: []component.Example{
		{URI: "kafka://support-tickets?groupId=categorizer", Description: "run a workflow for every record of support-tickets, as a member of the group categorizer"},
		{URI: "kafka://deployments?topic=audit-log", Description: "send the body to the topic audit-log, for example as a wiretap"},
		{URI: "kafka://orders?brokers=k1:9092,k2:9092&maxConcurrency=8&autoOffsetReset=latest", Description: "consume new records of orders from a two-broker cluster, 8 at a time"},
		{URI: "kafka://events?saslMechanism=scram-sha-512&saslUsername=helix&saslPassword=${env:KAFKA_PASSWORD}&tls=true", Description: "SCRAM over TLS, the password from the environment"},
	},
	Since: "0.2",
	// A record starts a fresh exchange; its span is a Kafka consumer span (trace.go).
	FreshExchanges: true,
	Trace:          traceInfo,
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
