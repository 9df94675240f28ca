package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/service"
)

// kafkaFlags are the connection flags of the commands that reach Kafka on
// their own (produce, tail, bench service): --brokers, and --config, a gcsm
// run configuration file whose brokers, tls and sasl sections they share,
// so that a secured cluster is described once for every command.
type kafkaFlags struct {
	brokers, config string
	fs              *flag.FlagSet
}

func (k *kafkaFlags) register(fs *flag.FlagSet, defaultBrokers string) {
	k.fs = fs
	fs.StringVar(&k.brokers, "brokers", defaultBrokers, "comma-separated Kafka `brokers`; with --config, its brokers unless given")
	fs.StringVar(&k.config, "config", "", "gcsm run's YAML `file`, whose brokers, tls and sasl sections reach the cluster ($"+kafkaconn.PasswordEnv+" holds the password without sasl.password_file)")
}

// set says whether --brokers was given on the command line.
func (k *kafkaFlags) set() bool {
	given := false
	k.fs.Visit(func(f *flag.Flag) { given = given || f.Name == "brokers" })
	return given
}

// conn is the connection the flags describe.
func (k *kafkaFlags) conn() (kafkaconn.Conn, error) {
	var (
		tlsCfg  kafkaconn.TLSConfig
		saslCfg kafkaconn.SASLConfig
		brokers = splitBrokers(k.brokers)
	)
	if k.config != "" {
		cfg, err := service.LoadConfig(k.config)
		if err != nil {
			return kafkaconn.Conn{}, err
		}
		tlsCfg, saslCfg = cfg.TLS, cfg.SASL
		if len(cfg.Brokers) > 0 && !k.set() {
			brokers = cfg.Brokers
		}
	}
	if len(brokers) == 0 {
		return kafkaconn.Conn{}, errors.New("--brokers names no broker")
	}
	c, err := kafkaconn.Build(brokers, tlsCfg, saslCfg, os.Getenv)
	if err != nil && k.config != "" {
		err = fmt.Errorf("%s: %w", k.config, err)
	}
	return c, err
}

func splitBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// benchUser is the SCRAM login of bench service --secure.
const benchUser = "gcsm-bench"

// secureLocal is a TLS and SCRAM-SHA-512 setup for a broker on loopback:
// a fresh self-signed certificate for 127.0.0.1 and a random password,
// written under dir as files (ca.pem, key.pem, password), so that the
// service reaches the broker through its tls and sasl sections as an
// operator's would, and gcsm broker can serve them.
type secureLocal struct {
	server *tls.Config
	tls    kafkaconn.TLSConfig
	sasl   kafkaconn.SASLConfig
	user   service.BrokerUser
}

func newSecureLocal(dir string) (*secureLocal, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gcsm broker"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	pass := rand.Text()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte(pass+"\n"), 0o600); err != nil {
		return nil, err
	}
	return &secureLocal{
		server: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12},
		tls:    kafkaconn.TLSConfig{CAFile: ca},
		sasl:   kafkaconn.SASLConfig{Mechanism: kafkaconn.ScramSHA512, Username: benchUser, PasswordFile: pw},
		user:   service.BrokerUser{Mechanism: kafkaconn.ScramSHA512, User: benchUser, Password: pass},
	}, nil
}

// brokerSecurity is what the broker demands.
func (s *secureLocal) brokerSecurity() service.BrokerSecurity {
	return service.BrokerSecurity{TLS: s.server, Users: []service.BrokerUser{s.user}}
}
