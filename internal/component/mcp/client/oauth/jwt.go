package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Client authentication by a signed JWT (private_key_jwt, RFC 7523 as used by
// OpenID Connect): the assertion goes in the token request's form, in place of a
// client secret.
const (
	authMethodPrivateKeyJWT = "private_key_jwt"
	clientAssertionType     = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// assertionLifetime is how long a client assertion is valid: one token request
	// needs only seconds, and a captured assertion is worth little after this.
	assertionLifetime = 5 * time.Minute
)

// PrivateKey signs the client assertions of a client that authenticates with
// private_key_jwt. Its String never shows the key.
type PrivateKey struct {
	signer crypto.Signer
	method jwt.SigningMethod
}

// ParsePrivateKey reads a PEM private key (PKCS #8, or SEC 1 "EC PRIVATE KEY", or
// PKCS #1 "RSA PRIVATE KEY") and the JWS algorithm to sign with: ES256, ES384,
// ES512 for EC keys of the matching curve, RS256, RS384, RS512, PS256, PS384, PS512
// for RSA keys, EdDSA for Ed25519 keys. alg "" picks the key's usual one (ES256 for
// P-256, RS256 for RSA, …). Errors never quote the key.
func ParsePrivateKey(pemData []byte, alg string) (*PrivateKey, error) {
	block, _ := pem.Decode(pemData)
	if block == nil {
		return nil, errors.New("private key: not PEM (expected -----BEGIN PRIVATE KEY----- or EC/RSA PRIVATE KEY)")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("private key: PEM block %q is not a private key (expected PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY)", block.Type)
	}
	if err != nil {
		// x509's messages name the format problem, never the key's bytes.
		return nil, fmt.Errorf("private key: %w", err)
	}
	var allowed []string
	var signer crypto.Signer
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		signer = k
		switch k.Curve {
		case elliptic.P256():
			allowed = []string{"ES256"}
		case elliptic.P384():
			allowed = []string{"ES384"}
		case elliptic.P521():
			allowed = []string{"ES512"}
		default:
			return nil, errors.New("private key: EC keys must be on P-256, P-384 or P-521")
		}
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, fmt.Errorf("private key: RSA key has %d bits; use at least 2048", k.N.BitLen())
		}
		signer = k
		allowed = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	case ed25519.PrivateKey:
		signer = k
		allowed = []string{"EdDSA"}
	default:
		return nil, fmt.Errorf("private key: %T keys are not supported (use EC, RSA or Ed25519)", key)
	}
	if alg == "" {
		alg = allowed[0]
	}
	if !slices.Contains(allowed, alg) {
		return nil, fmt.Errorf("private key: signing_alg %s does not fit this key (use %s)", alg, strings.Join(allowed, ", "))
	}
	return &PrivateKey{signer: signer, method: jwt.GetSigningMethod(alg)}, nil
}

// Alg is the JWS algorithm the key signs with.
func (k *PrivateKey) Alg() string { return k.method.Alg() }

// Public is the key's public half (to register at the authorization server).
func (k *PrivateKey) Public() crypto.PublicKey { return k.signer.Public() }

// String names the algorithm only.
func (k *PrivateKey) String() string { return "private key (" + k.Alg() + ")" }

// Assertion returns a client assertion for clientID: iss and sub are the client,
// aud the authorization server (its issuer, and its token endpoint when that
// differs: servers check one or the other), a fresh jti, and a lifetime of
// minutes.
func (k *PrivateKey) Assertion(clientID string, audience []string, now time.Time) (string, error) {
	var jti [16]byte
	if _, err := rand.Read(jti[:]); err != nil {
		return "", err
	}
	claims := jwt.RegisteredClaims{
		Issuer:    clientID,
		Subject:   clientID,
		Audience:  jwt.ClaimStrings(compactAudience(audience)),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(assertionLifetime)),
		ID:        hex.EncodeToString(jti[:]),
	}
	s, err := jwt.NewWithClaims(k.method, claims).SignedString(k.signer)
	if err != nil {
		return "", fmt.Errorf("sign client assertion with %s: %w", k.Alg(), err)
	}
	return s, nil
}

// compactAudience drops empty and repeated values, and values that differ only by a
// trailing slash.
func compactAudience(in []string) []string {
	var out []string
	for _, a := range in {
		if a == "" || slices.ContainsFunc(out, func(o string) bool { return strings.TrimRight(o, "/") == strings.TrimRight(a, "/") }) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// checkPrivateKeyJWT refuses a server whose metadata says it will not take this
// key's assertions, before anything is signed or sent.
func checkPrivateKeyJWT(issuer string, methods, algs []string, k *PrivateKey) error {
	if len(methods) > 0 && !slices.Contains(methods, authMethodPrivateKeyJWT) {
		return fmt.Errorf("oauth2: authorization server %s does not take private_key_jwt client authentication (it takes %s); use client_secret instead of private_key",
			issuer, strings.Join(methods, ", "))
	}
	if len(algs) > 0 && !slices.Contains(algs, k.Alg()) {
		return fmt.Errorf("oauth2: authorization server %s takes client assertions signed with %s, not %s; set signing_alg (and a key that fits it)",
			issuer, strings.Join(algs, ", "), k.Alg())
	}
	return nil
}
