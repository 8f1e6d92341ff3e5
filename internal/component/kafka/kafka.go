// Package kafka implements kafka://topic: a consumer-group trigger and a record
// producer on franz-go (github.com/twmb/franz-go).
//
// Options and headers are declared in spec.go ([Spec]); docs/kafka.md tells the
// delivery story (at least once, commits after the workflow, duplicates after a
// crash). The Go API is [New] with [Options], registered by internal/component/all:
//
//	hc.AddComponent(kafka.Scheme, kafka.New(kafka.Options{Brokers: []string{"k1:9092"}}))
//
// Building an endpoint only checks its options; clients connect when a producer or
// consumer starts. Each producer and consumer owns one franz-go client.
package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/uri"
)

// Options configure [New]. The zero value is valid.
type Options struct {
	// Brokers are the seed brokers (host:port) of endpoints without a brokers=
	// option (helix.kafka.brokers); empty means DefaultBrokers.
	Brokers []string
	// Logger returns the logger for failed records and commit errors; nil means
	// slog.Default.
	Logger func() *slog.Logger
}

// Component is the kafka:// component. It holds no connections itself; it is safe
// for concurrent use.
type Component struct {
	brokers []string
	logger  func() *slog.Logger
}

var (
	_ component.Component = (*Component)(nil)
	_ component.Described = (*Component)(nil)
)

// New returns a kafka component. It starts nothing.
func New(o Options) *Component {
	c := &Component{brokers: append([]string(nil), o.Brokers...), logger: o.Logger}
	if len(c.brokers) == 0 {
		c.brokers = []string{DefaultBrokers}
	}
	if c.logger == nil {
		c.logger = slog.Default
	}
	return c
}

// endpoint is one kafka:// URI with its options checked.
type endpoint struct {
	c     *Component
	raw   string
	topic string
	opts  uriOptions
	// base are the client options shared by producer and consumer: brokers,
	// client id, SASL, TLS.
	base []kgo.Opt
}

// uriOptions are the URI's options (see Spec).
type uriOptions struct {
	Brokers               string        `option:"brokers"`
	BrokersGiven          bool          `option:"brokers,given"`
	Topic                 string        `option:"topic"`
	TopicGiven            bool          `option:"topic,given"`
	ClientID              string        `option:"clientId"`
	GroupID               string        `option:"groupId"`
	MaxConcurrency        int64         `option:"maxConcurrency"`
	AutoOffsetReset       string        `option:"autoOffsetReset"`
	CommitInterval        time.Duration `option:"commitInterval"`
	ValueFormat           string        `option:"valueFormat"`
	SessionTimeout        time.Duration `option:"sessionTimeout"`
	Key                   string        `option:"key"`
	Acks                  string        `option:"acks"`
	Idempotent            bool          `option:"idempotent"`
	DeliveryTimeout       time.Duration `option:"deliveryTimeout"`
	Linger                time.Duration `option:"linger"`
	AutoCreateTopics      bool          `option:"autoCreateTopics"`
	SASLMechanism         string        `option:"saslMechanism"`
	SASLUsername          string        `option:"saslUsername"`
	SASLPassword          string        `option:"saslPassword"`
	TLS                   bool          `option:"tls"`
	TLSCAFile             string        `option:"tlsCaFile"`
	TLSCertFile           string        `option:"tlsCertFile"`
	TLSKeyFile            string        `option:"tlsKeyFile"`
	TLSInsecureSkipVerify bool          `option:"tlsInsecureSkipVerify"`
}

var uriBinding = component.Bind[uriOptions](Spec)

// CreateEndpoint checks the URI's options (so `helix validate` reports them at the
// URI's position); nothing connects.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	opts, err := uriBinding.Parse(u)
	if err != nil {
		return nil, err
	}
	topic := strings.Trim(u.Host+u.Path, "/")
	if opts.TopicGiven {
		topic = opts.Topic
	}
	var problems []string
	if topic == "" {
		problems = append(problems, "no topic: write kafka://TOPIC or give topic=")
	} else if err := checkTopic(topic); err != nil {
		problems = append(problems, err.Error())
	}
	brokers := c.brokers
	if opts.BrokersGiven {
		brokers = nil
		for _, b := range strings.Split(opts.Brokers, ",") {
			if b = strings.TrimSpace(b); b != "" {
				brokers = append(brokers, b)
			}
		}
	}
	for _, b := range brokers {
		if h, p, err := net.SplitHostPort(b); err != nil || h == "" || p == "" {
			problems = append(problems, fmt.Sprintf("broker %q is not host:port (write brokers=host1:9092,host2:9092)", b))
		}
	}
	if len(brokers) == 0 {
		problems = append(problems, "option brokers names no broker (write brokers=host1:9092,host2:9092)")
	}
	base := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID(opts.ClientID)}
	if o, err := saslOpt(opts); err != nil {
		problems = append(problems, err.Error())
	} else if o != nil {
		base = append(base, o)
	}
	if cfg, err := tlsConfig(opts); err != nil {
		problems = append(problems, err.Error())
	} else if cfg != nil {
		base = append(base, kgo.DialTLSConfig(cfg))
	}
	if opts.Idempotent && opts.Acks != "all" {
		problems = append(problems, fmt.Sprintf("acks=%s needs idempotent=false (idempotent writes need acks=all)", opts.Acks))
	}
	if opts.MaxConcurrency < 0 {
		problems = append(problems, fmt.Sprintf("option maxConcurrency=%d must be 0 (one per partition) or more", opts.MaxConcurrency))
	}
	if opts.CommitInterval <= 0 {
		problems = append(problems, "option commitInterval must be positive")
	}
	if opts.SessionTimeout < 100*time.Millisecond {
		problems = append(problems, "option sessionTimeout must be at least 100ms (brokers usually require 6s or more)")
	}
	if opts.DeliveryTimeout < time.Second {
		problems = append(problems, "option deliveryTimeout must be at least 1s")
	}
	if opts.Linger < 0 {
		problems = append(problems, "option linger must not be negative")
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return &endpoint{c: c, raw: u.Raw, topic: topic, opts: opts, base: base}, nil
}

// checkTopic applies Kafka's rule for topic names, so a typo fails at validate
// rather than at the broker.
func checkTopic(t string) error {
	if len(t) > 249 || t == "." || t == ".." {
		return fmt.Errorf("topic %q is not a valid Kafka topic name", t)
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("topic %q has the character %q; Kafka topic names use letters, digits, '.', '_' and '-'", t, r)
		}
	}
	return nil
}

func saslOpt(o uriOptions) (kgo.Opt, error) {
	mech := o.SASLMechanism
	user, pass := o.SASLUsername, o.SASLPassword
	if mech == "" {
		if user != "" || pass != "" {
			return nil, errors.New("saslUsername/saslPassword need saslMechanism (plain, scram-sha-256 or scram-sha-512)")
		}
		return nil, nil
	}
	if user == "" || pass == "" {
		return nil, fmt.Errorf("saslMechanism=%s needs saslUsername and saslPassword (write the password as ${env:NAME})", mech)
	}
	var m sasl.Mechanism
	switch mech {
	case "plain":
		m = plain.Auth{User: user, Pass: pass}.AsMechanism()
	case "scram-sha-256":
		m = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case "scram-sha-512":
		m = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	}
	return kgo.SASL(m), nil
}

func tlsConfig(o uriOptions) (*tls.Config, error) {
	ca, cert, key := o.TLSCAFile, o.TLSCertFile, o.TLSKeyFile
	if !o.TLS && ca == "" && cert == "" && key == "" && !o.TLSInsecureSkipVerify {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.TLSInsecureSkipVerify} //nolint:gosec // an explicit, documented option
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("tlsCaFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tlsCaFile %s holds no PEM certificate", ca)
		}
		cfg.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("tlsCertFile and tlsKeyFile go together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("tlsCertFile/tlsKeyFile: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func (e *endpoint) URI() string { return e.raw }

// stopTimeout bounds Stop when its context has no deadline.
const stopTimeout = 30 * time.Second

// redacted is the endpoint's URI without secret values, for errors and logs.
func (e *endpoint) redacted() string { return Spec.Redact(e.raw) }
