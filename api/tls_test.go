package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/habilis-router/habilis"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// selfSigned returns a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "habilis test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	r := newRouter(t, testTools(t))
	_, addr := serve(t, r, ServerOptions{Token: "s3cret", TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	ctx := context.Background()

	c := dial(t, addr, DialOptions{Token: "s3cret", TLS: &tls.Config{RootCAs: pool}})
	d, err := c.Select(ctx, "what's the weather in Oslo right now", habilis.SelectOptions{K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Matches) != 1 || d.Matches[0].Tool != "get_weather" {
		t.Errorf("Select over TLS = %+v, want get_weather", d)
	}
	// A client that does not trust the certificate, or speaks plaintext,
	// gets nowhere.
	for name, opts := range map[string]DialOptions{
		"untrusted": {Token: "s3cret", TLS: &tls.Config{}},
		"plaintext": {},
	} {
		_, err := dial(t, addr, opts).Select(ctx, "weather", habilis.SelectOptions{})
		if status.Code(err) != codes.Unavailable {
			t.Errorf("%s client: error %v, want Unavailable", name, err)
		}
	}
}
