package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// selfSigned writes a CA-less self-signed certificate for 127.0.0.1 and returns
// the server's TLS config and the path of the certificate as a CA file.
func selfSigned(t *testing.T) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kfake"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, _ := x509.MarshalECPrivateKey(key)
	pair, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, ca
}

// TestSASLAndTLS sends and receives through a kfake cluster that requires SASL
// (each mechanism) over TLS; a wrong password fails the send with an error that
// does not show it.
func TestSASLAndTLS(t *testing.T) {
	t.Parallel()
	if os.Getenv(kafkatest.BrokersEnv) != "" {
		t.Skip("needs a kfake cluster with its own users")
	}
	serverTLS, ca := selfSigned(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.TLS(serverTLS),
		kfake.Superuser("PLAIN", "plainuser", "plain-pw"),
		kfake.Superuser("SCRAM-SHA-256", "user256", "pw-256"),
		kfake.Superuser("SCRAM-SHA-512", "user512", "pw-512"),
		kfake.SeedTopics(1, "secure"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	c := New(Options{Brokers: brokers})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ mech, user, pass string }{
		{"plain", "plainuser", "plain-pw"}, {"scram-sha-256", "user256", "pw-256"}, {"scram-sha-512", "user512", "pw-512"},
	} {
		t.Run(tc.mech, func(t *testing.T) {
			auth := "saslMechanism=" + tc.mech + "&saslUsername=" + tc.user + "&saslPassword=" + tc.pass + "&tlsCaFile=" + ca
			p, err := endpointFor(t, c, "kafka://secure?"+auth).CreateProducer()
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer p.Stop(ctx)
			if err := p.Process(ctx, exchange.NewWithBody(exchange.InOnly, "via "+tc.mech)); err != nil {
				t.Fatalf("send: %v", err)
			}
			got := make(chan string, 10)
			cons, err := endpointFor(t, c, "kafka://secure?groupId="+tc.mech+"&"+auth).CreateConsumer(component.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
				got <- exchange.Stringify(ex.In().Body())
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			if err := cons.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer cons.Stop(ctx)
			for {
				select {
				case b := <-got:
					if b == "via "+tc.mech {
						return
					}
				case <-ctx.Done():
					t.Fatal("the record did not come back")
				}
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		p, err := endpointFor(t, c, "kafka://secure?saslMechanism=scram-sha-256&saslUsername=user256&saslPassword=not-the-pw-s3cr3t&tlsCaFile="+ca+"&deliveryTimeout=1s").CreateProducer()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer p.Stop(ctx)
		err = p.Process(ctx, exchange.NewWithBody(exchange.InOnly, "x"))
		if err == nil {
			t.Fatal("a send with a wrong password succeeded")
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Fatalf("the error shows the password: %v", err)
		}
		t.Logf("wrong password: %v", err)
	})
	t.Run("no TLS", func(t *testing.T) {
		p, err := endpointFor(t, c, "kafka://secure?saslMechanism=plain&saslUsername=plainuser&saslPassword=plain-pw&deliveryTimeout=1s").CreateProducer()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer p.Stop(ctx)
		if err := p.Process(ctx, exchange.NewWithBody(exchange.InOnly, "x")); err == nil {
			t.Fatal("a plaintext send to a TLS listener succeeded")
		}
	})
}
