package servicebench

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
	"time"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/service"
)

// BrokerOptions say which brokers a bench reaches, as gcsm bench
// service's flags do.
type BrokerOptions struct {
	// Embedded starts the embedded broker in this process, with Partitions
	// partitions a topic; else Brokers (--brokers) are reached.
	Embedded   bool
	Partitions int
	Brokers    []string
	// Secure (--secure) secures the embedded broker with TLS and SCRAM;
	// Config (--config) is a configuration file whose tls and sasl
	// sections secure the connection to Brokers.
	Secure bool
	Config string
	// BrokerDir (--broker-dir) is the data directory of Brokers' broker.
	BrokerDir string
}

// Connect points cfg at the bench's brokers, secured as o says: the
// embedded broker started in this process or o's Brokers, with TLS
// and SCRAM under Secure (its files under dir), or the tls and sasl
// sections of Config. It returns the connection, the broker's data
// directory (where known, for a soak's disk figure), and what stops it.
func Connect(cfg *service.Config, dir string, o BrokerOptions) (kafkaconn.Conn, string, func(), error) {
	closeBroker, brokerDir := func() {}, o.BrokerDir
	if o.Embedded {
		bcfg := *cfg
		bcfg.Embedded.Listen = "127.0.0.1:0"
		bcfg.Embedded.Partitions = o.Partitions
		bcfg.State.Dir = filepath.Join(dir, "broker")
		var sec service.BrokerSecurity
		if o.Secure {
			local, err := NewSecureLocal(dir)
			if err != nil {
				return kafkaconn.Conn{}, "", nil, err
			}
			sec, cfg.TLS, cfg.SASL = local.BrokerSecurity(), local.TLS, local.SASL
		}
		b, err := service.StartBroker(bcfg, sec)
		if err != nil {
			return kafkaconn.Conn{}, "", nil, err
		}
		closeBroker = b.Close
		cfg.Brokers, brokerDir = b.Addrs(), b.Dir()
	} else {
		cfg.Brokers = o.Brokers
		if o.Config != "" {
			file, err := service.LoadConfig(o.Config)
			if err != nil {
				return kafkaconn.Conn{}, "", nil, err
			}
			cfg.TLS, cfg.SASL = file.TLS, file.SASL
		}
	}
	conn, err := kafkaconn.Build(cfg.Brokers, cfg.TLS, cfg.SASL, os.Getenv)
	if err == nil {
		err = conn.Check(context.Background())
	}
	if err != nil {
		closeBroker()
		return kafkaconn.Conn{}, "", nil, err
	}
	return conn, brokerDir, closeBroker, nil
}

// BenchUser is the SCRAM login of bench service --secure.
const BenchUser = "gcsm-bench"

// SecureLocal is a TLS and SCRAM-SHA-512 setup for a broker on loopback:
// a fresh self-signed certificate for 127.0.0.1 and a random password,
// written under dir as files (ca.pem, key.pem, password), so that the
// service reaches the broker through its tls and sasl sections as an
// operator's would, and gcsm broker can serve them.
type SecureLocal struct {
	// Server is the broker's TLS; TLS and SASL are the clients' sections,
	// and User the login the broker accepts.
	Server *tls.Config
	TLS    kafkaconn.TLSConfig
	SASL   kafkaconn.SASLConfig
	User   service.BrokerUser
}

// NewSecureLocal makes a setup, its files under dir.
func NewSecureLocal(dir string) (*SecureLocal, error) {
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
	return &SecureLocal{
		Server: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12},
		TLS:    kafkaconn.TLSConfig{CAFile: ca},
		SASL:   kafkaconn.SASLConfig{Mechanism: kafkaconn.ScramSHA512, Username: BenchUser, PasswordFile: pw},
		User:   service.BrokerUser{Mechanism: kafkaconn.ScramSHA512, User: BenchUser, Password: pass},
	}, nil
}

// BrokerSecurity is what the broker demands.
func (s *SecureLocal) BrokerSecurity() service.BrokerSecurity {
	return service.BrokerSecurity{TLS: s.Server, Users: []service.BrokerUser{s.User}}
}
