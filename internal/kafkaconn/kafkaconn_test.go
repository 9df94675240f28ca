package kafkaconn

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/internal/testtls"
	"github.com/twmb/franz-go/pkg/kfake"
)

const secret = "s3cret-Pa55"

// secured starts a cluster that serves TLS and SCRAM-SHA-256 for user gcsm.
func secured(t *testing.T) (addr string, client Conn) {
	t.Helper()
	srv, cli := testtls.Configs(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(srv), kfake.EnableSASL(),
		kfake.Superuser(ScramSHA256, "gcsm", secret))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	m, err := Mechanism(ScramSHA256, "gcsm", secret)
	if err != nil {
		t.Fatal(err)
	}
	return c.ListenAddrs()[0], Conn{Brokers: c.ListenAddrs(), TLS: cli, SASL: m, User: "gcsm"}
}

func TestCheck(t *testing.T) {
	addr, good := secured(t)
	if err := good.Check(context.Background()); err != nil {
		t.Fatalf("good credentials: %v", err)
	}
	wrongPass := good
	wrongPass.SASL, _ = Mechanism(ScramSHA256, "gcsm", "not-"+secret)
	untrusted := good
	_, other := testtls.Configs(t)
	untrusted.TLS = other
	plain := good
	plain.TLS = nil
	for _, c := range []struct {
		name string
		conn Conn
		want error
	}{
		{"wrong password", wrongPass, ErrAuthentication},
		{"untrusted CA", untrusted, ErrCertificate},
		{"plaintext to TLS", plain, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			err := c.conn.Check(context.Background())
			if err == nil {
				t.Fatal("Check passed")
			}
			if d := time.Since(start); d > CheckTimeout+time.Second {
				t.Errorf("took %v, more than %v", d, CheckTimeout)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %q is not %q", err, c.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, addr) {
				t.Errorf("error %q does not name the broker %s", msg, addr)
			}
			if strings.Contains(msg, secret) || strings.Contains(msg, "\n") {
				t.Errorf("error %q holds the password or several lines", msg)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == PasswordEnv {
			return "from-env"
		}
		return ""
	}
	c, err := Build([]string{"b:9092"}, TLSConfig{Enabled: true}, SASLConfig{Mechanism: ScramSHA512, Username: "u", PasswordFile: pw}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.TLS == nil || c.SASL == nil || c.SASL.Name() != ScramSHA512 {
		t.Fatalf("Build gave %+v", c)
	}
	if s := c.String(); s != `b:9092 (TLS, SASL SCRAM-SHA-512 as "u")` {
		t.Errorf("String() = %q", s)
	}
	if _, err := Build(nil, TLSConfig{}, SASLConfig{Mechanism: Plain, Username: "u"}, env); err != nil {
		t.Errorf("password from the environment: %v", err)
	}
	for _, bad := range []struct {
		tls  TLSConfig
		sasl SASLConfig
		want string
	}{
		{TLSConfig{CAFile: filepath.Join(dir, "none.pem")}, SASLConfig{}, "tls.ca_file"},
		{TLSConfig{CAFile: pw}, SASLConfig{}, "no PEM certificate"},
		{TLSConfig{CertFile: pw}, SASLConfig{}, "cert_file and key_file go together"},
		{TLSConfig{}, SASLConfig{Mechanism: "GSSAPI", Username: "u"}, `sasl.mechanism "GSSAPI"`},
		{TLSConfig{}, SASLConfig{Mechanism: Plain}, "needs a username"},
		{TLSConfig{}, SASLConfig{Username: "u"}, "need a mechanism"},
		{TLSConfig{}, SASLConfig{Mechanism: Plain, Username: "u", PasswordFile: filepath.Join(dir, "none")}, "sasl.password_file"},
	} {
		_, err := Build(nil, bad.tls, bad.sasl, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Build(%+v, %+v) = %v, want an error with %q", bad.tls, bad.sasl, err, bad.want)
		}
	}
	if _, err := Build(nil, TLSConfig{}, SASLConfig{Mechanism: Plain, Username: "u"}, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), PasswordEnv) {
		t.Errorf("no password: %v", err)
	}
}

// TestCheckUnreachable: a broker that refuses connections fails Check with
// the refusal, not with the deadline that ended the tries.
func TestCheckUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = Plaintext(addr).Check(ctx)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Check of a closed port: %v", err)
	}
}
