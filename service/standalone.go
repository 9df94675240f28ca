package service

import "crypto/tls"

// Broker is the embedded Kafka-protocol broker standing alone, as gcsm
// broker runs it: the broker gcsm run would start in its own process, so
// that a benchmark's broker does not share the service's cores.
type Broker struct{ e *embedded }

// StartBroker starts the broker of cfg's embedded section: it listens on
// cfg.Embedded.Listen, keeps its log under cfg.State.Dir/kafka (the layout
// gcsm run uses, so it can serve a stopped service's log) and seeds the
// configured input and output topics, plus topics, with
// cfg.Embedded.Partitions partitions each. It locks the log
// (cfg.State.Dir/kafka.lock) until Close, and refuses a log that another
// broker holds, naming its pid; a service using the broker may own the
// rest of the directory.
func StartBroker(cfg Config, sec BrokerSecurity, topics ...string) (*Broker, error) {
	e, err := startEmbedded(cfg, sec, topics...)
	if err != nil {
		return nil, err
	}
	return &Broker{e: e}, nil
}

// BrokerSecurity is what a standalone broker demands of its clients, so
// that a secured setup can be tried on one machine and tested end to end.
type BrokerSecurity struct {
	// TLS, if set, is the server's configuration: every connection is TLS.
	TLS *tls.Config
	// Users, if any, turn SASL on: only they may connect.
	Users []BrokerUser
}

// BrokerUser is one SASL login a broker accepts.
type BrokerUser struct {
	Mechanism string // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	User      string
	Password  string
}

// Addrs are the addresses the broker listens on.
func (b *Broker) Addrs() []string { return b.e.addrs }

// Dir is the directory of the broker's log.
func (b *Broker) Dir() string { return b.e.dir }

// Close stops the broker; clients connected to it see their connections
// closed.
func (b *Broker) Close() { b.e.close() }
