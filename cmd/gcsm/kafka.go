package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

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
