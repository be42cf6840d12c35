//go:build !js

package main_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns their paths.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "lifeline test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestServesTLSAndTheEventsEndpointOverWSS(t *testing.T) {
	certFile, keyFile := selfSigned(t)
	h := startHost(t, "-web", webDir(t), "-cert", certFile, "-key", keyFile)
	if !strings.HasPrefix(h.url, "https://") {
		t.Fatalf("serving at %s, want https", h.url)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(h.url + "/")
	if err != nil {
		t.Fatalf("GET over TLS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / over TLS: %d", resp.StatusCode)
	}

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	wss := "wss://" + strings.TrimPrefix(h.url, "https://") + wire.DefaultPath
	c, _, err := websocket.Dial(ctx, wss, &websocket.DialOptions{
		HTTPClient:   client,
		Subprotocols: []string{wire.Subprotocol},
		HTTPHeader:   http.Header{"Origin": {h.url}},
	})
	if err != nil {
		t.Fatalf("dial %s: %v", wss, err)
	}
	defer c.CloseNow()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := wire.DecodeHost(b); err != nil || f.T != wire.TypeReady {
		t.Fatalf("first frame over wss %s (%v), want ready", b, err)
	}

	// Plain http to a TLS port is refused, not served.
	if resp, err := http.Get("http://" + strings.TrimPrefix(h.url, "https://") + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain http was served by a TLS Host")
		}
	}
}

func TestCertWithoutKeyIsRefused(t *testing.T) {
	out, err := exec.Command(hostBin, "-cert", "x.pem").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "-cert and -key go together") {
		t.Fatalf("host -cert only: %v, %q; want exit 2 naming both flags", err, out)
	}
}
