// Package kafkaconn holds what every Kafka client of gcsm shares: the seed
// brokers, TLS and SASL. franz-go (kgo) is gcsm's one Kafka client, so one
// Conn configures the input's reading, the group memberships, the alerts'
// producer, the batch log, the dead letters, the admin requests, and the
// produce, tail and bench commands alike: a secured cluster is set up once
// (STYLE.md, "one client per protocol").
//
// A Conn never holds a password in a form that prints: its String names the
// brokers, whether TLS is on and the SASL mechanism and user, nothing more,
// so it may go into logs and errors.
package kafkaconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TLSConfig is the tls section of gcsm's configuration. TLS is on when
// Enabled is set or any file or ServerName is given; with no CAFile the
// system's roots verify the brokers, as managed clusters need.
type TLSConfig struct {
	Enabled bool `yaml:"enabled" json:"enabled"`
	// CAFile is a PEM file of the certificates that may sign the brokers'.
	CAFile string `yaml:"ca_file" json:"ca_file"`
	// CertFile and KeyFile, both or neither, are the client's certificate
	// and key (PEM) for brokers that authenticate clients by certificate.
	CertFile string `yaml:"cert_file" json:"cert_file"`
	KeyFile  string `yaml:"key_file" json:"key_file"`
	// ServerName overrides the name the brokers' certificates must carry;
	// by default it is each broker's host.
	ServerName string `yaml:"server_name" json:"server_name"`
	// InsecureSkipVerify accepts any broker certificate: encryption without
	// authentication of the broker, for tests only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify" json:"insecure_skip_verify"`
}

// On says whether the section asks for TLS.
func (c TLSConfig) On() bool {
	return c.Enabled || c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" || c.ServerName != "" || c.InsecureSkipVerify
}

// Build makes the client's tls.Config, reading the files; nil when TLS is off.
func (c TLSConfig) Build() (*tls.Config, error) {
	if !c.On() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file %s: no PEM certificate in it", c.CAFile)
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("tls: cert_file and key_file go together")
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file/key_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// The SASL mechanisms gcsm speaks; Kafka's names for them.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// PasswordEnv is the environment variable that holds the SASL password
// when sasl.password_file is not given: a secret store can inject it
// without a file on disk.
const PasswordEnv = "GCSM_KAFKA_PASSWORD"

// SASLConfig is the sasl section of gcsm's configuration. SASL is on when
// Mechanism is set.
type SASLConfig struct {
	Mechanism string `yaml:"mechanism" json:"mechanism"`
	Username  string `yaml:"username" json:"username"`
	// PasswordFile holds the password (one trailing newline is dropped);
	// without it the password comes from $GCSM_KAFKA_PASSWORD. There is no
	// password key: a configuration file is read by more people and tools
	// than a secret should be.
	PasswordFile string `yaml:"password_file" json:"password_file"`
}

// Validate checks the section without reading files.
func (c SASLConfig) Validate() error {
	switch c.Mechanism {
	case "":
		if c.Username != "" || c.PasswordFile != "" {
			return errors.New("sasl: username and password_file need a mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
		}
		return nil
	case Plain, ScramSHA256, ScramSHA512:
	default:
		return fmt.Errorf("sasl.mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.Mechanism)
	}
	if c.Username == "" {
		return fmt.Errorf("sasl: %s needs a username", c.Mechanism)
	}
	return nil
}

// Build makes the SASL mechanism, reading the password from PasswordFile or
// from getenv(PasswordEnv); nil when SASL is off.
func (c SASLConfig) Build(getenv func(string) string) (sasl.Mechanism, error) {
	if err := c.Validate(); err != nil || c.Mechanism == "" {
		return nil, err
	}
	var pass string
	if c.PasswordFile != "" {
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("sasl.password_file: %w", err)
		}
		pass = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	} else if getenv != nil {
		pass = getenv(PasswordEnv)
	}
	if pass == "" {
		return nil, fmt.Errorf("sasl: no password for user %q: set sasl.password_file or $%s", c.Username, PasswordEnv)
	}
	return Mechanism(c.Mechanism, c.Username, pass)
}

// Mechanism makes the named SASL mechanism for user and pass.
func Mechanism(name, user, pass string) (sasl.Mechanism, error) {
	switch name {
	case Plain:
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case ScramSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case ScramSHA512:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", name)
}

// Conn is how to reach the Kafka cluster.
type Conn struct {
	Brokers []string
	TLS     *tls.Config    // nil: plaintext
	SASL    sasl.Mechanism // nil: no authentication
	// User is SASL's user, for messages.
	User string
}

// Build makes a Conn from the configuration's sections.
func Build(brokers []string, t TLSConfig, s SASLConfig, getenv func(string) string) (Conn, error) {
	tc, err := t.Build()
	if err != nil {
		return Conn{}, err
	}
	m, err := s.Build(getenv)
	if err != nil {
		return Conn{}, err
	}
	return Conn{Brokers: brokers, TLS: tc, SASL: m, User: s.Username}, nil
}

// Plaintext is a Conn to brokers without TLS or SASL.
func Plaintext(brokers ...string) Conn { return Conn{Brokers: brokers} }

// String describes the connection without its secrets.
func (c Conn) String() string {
	var b strings.Builder
	b.WriteString(strings.Join(c.Brokers, ","))
	if c.TLS != nil {
		b.WriteString(" (TLS")
	} else {
		b.WriteString(" (plaintext")
	}
	if c.SASL != nil {
		fmt.Fprintf(&b, ", SASL %s as %q", c.SASL.Name(), c.User)
	}
	b.WriteString(")")
	return b.String()
}

// dialTimeout bounds one connection's TCP and TLS handshake, so that an
// unreachable broker fails a Check well within CheckTimeout.
const dialTimeout = 5 * time.Second

// Opts are the client options every gcsm client starts from: the seeds,
// the dialer, TLS and SASL.
func (c Conn) Opts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.ClientID("gcsm"), kgo.DialTimeout(dialTimeout)}
	if c.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(c.TLS.Clone()))
	}
	if c.SASL != nil {
		opts = append(opts, kgo.SASL(c.SASL))
	}
	return opts
}

// NewClient starts a kgo client on c with the extra options.
func (c Conn) NewClient(extra ...kgo.Opt) (*kgo.Client, error) {
	if len(c.Brokers) == 0 {
		return nil, errors.New("kafka: no brokers")
	}
	return kgo.NewClient(append(c.Opts(), extra...)...)
}

// CheckTimeout bounds Check: a wrong password or an untrusted certificate
// must surface as such at start, not as records timing out minutes later.
const CheckTimeout = 15 * time.Second

// Check connects to the cluster once, handshakes and authenticates, and
// asks for metadata, within CheckTimeout. Its error names the brokers and
// the cause in one line: ErrAuthentication, ErrCertificate, or the
// connection's own error.
func (c Conn) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	var sasl saslWatch
	cl, err := c.NewClient(kgo.WithHooks(&sasl))
	if err != nil {
		return fmt.Errorf("kafka %s: %w", c, err)
	}
	defer cl.Close()
	// Ping tries each broker once, without kgo's retries, so the first
	// failure's cause comes back instead of a timeout that hides it. Only
	// causes that may pass (a broker starting) are tried again.
	classify := func(err error) error {
		if Classify(err) == err && errors.Is(err, io.EOF) && sasl.failed.Load() {
			// Brokers before Kafka 2.2, and kfake, answer bad credentials
			// by closing the connection instead of with an error code.
			return fmt.Errorf("%w: the broker closed the connection after the SASL exchange: %w", ErrAuthentication, err)
		}
		return Classify(err)
	}
	var last error // the last failure that was not the deadline's
	for {
		err := cl.Ping(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		if cause := classify(last); cause != last || ctx.Err() != nil {
			return fmt.Errorf("kafka %s: %w", c, cause)
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// saslWatch is a kgo hook that notes a connection ending right after a
// SASLAuthenticate request was written.
type saslWatch struct {
	lastKey atomic.Int32
	failed  atomic.Bool
}

func (w *saslWatch) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		w.lastKey.Store(int32(key))
	}
}

func (w *saslWatch) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil && w.lastKey.Load() == int32(kmsg.SASLAuthenticate) {
		w.failed.Store(true)
	}
}

// The causes Classify tells apart.
var (
	ErrAuthentication = errors.New("SASL authentication failed (wrong user, password or mechanism)")
	ErrCertificate    = errors.New("TLS certificate not trusted")
	ErrTLSMismatch    = errors.New("TLS handshake failed (does the broker serve TLS on this port? set or unset tls)")
	ErrClosedAtOnce   = errors.New("the broker closed the connection at once (TLS or SASL set on one side only?)")
)

// Classify wraps err with the cause an operator can act on, where it is
// one of those above; other errors come back unchanged.
func Classify(err error) error {
	var (
		unknown   x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		recordHdr tls.RecordHeaderError
		alert     tls.AlertError
		opErr     *net.OpError
		firstEOF  *kgo.ErrFirstReadEOF
	)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.UnsupportedSaslMechanism),
		errors.Is(err, kerr.IllegalSaslState):
		return fmt.Errorf("%w: %w", ErrAuthentication, err)
	case errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		return fmt.Errorf("%w: %w", ErrCertificate, err)
	case errors.As(err, &recordHdr), errors.As(err, &alert):
		return fmt.Errorf("%w: %w", ErrTLSMismatch, err)
	case errors.As(err, &firstEOF):
		return fmt.Errorf("%w: %w", ErrClosedAtOnce, err)
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		return fmt.Errorf("%w: %w", ErrTLSMismatch, err)
	}
	return err
}
