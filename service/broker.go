package service

import (
	"crypto/rand"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
)

// embedded is the in-process Kafka-protocol broker that gcsm run starts
// when no brokers are configured, so one machine needs no servers. It is
// franz-go's kfake, persisting its log under the state directory, so a
// restarted gcsm finds its input and committed offsets again.
type embedded struct {
	c     *kfake.Cluster
	addrs []string
	dir   string
}

func startEmbedded(cfg Config, extraTopics ...string) (*embedded, error) {
	host, port, err := net.SplitHostPort(cfg.Embedded.Listen)
	if err != nil {
		return nil, fmt.Errorf("embedded.listen %q: %w", cfg.Embedded.Listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("embedded.listen %q: bad port", cfg.Embedded.Listen)
	}
	dir := filepath.Join(cfg.State.Dir, "kafka")
	topics := []string{cfg.Input.Topic, cfg.Output.Topic}
	if cfg.Output.DeadLetterTopic != "" {
		topics = append(topics, cfg.Output.DeadLetterTopic)
	}
	topics = append(topics, extraTopics...)
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.Ports(p),
		// kfake listens on loopback unless told otherwise; the configured
		// host decides, so a container can serve the broker to its network.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, net.JoinHostPort(host, port))
		}),
		kfake.DataDir(dir),
		// An id of its own, which kfake keeps in the data directory from the
		// first start on, tells this log's broker from another gcsm's on the
		// same address (gcsm tail checks it); kfake's default is "kfake" for all.
		kfake.ClusterID("gcsm-"+rand.Text()),
		kfake.SeedTopics(int32(cfg.Embedded.Partitions), topics...),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(cfg.Embedded.Partitions),
	)
	if err != nil {
		return nil, fmt.Errorf("embedded broker on %s: %w", cfg.Embedded.Listen, err)
	}
	return &embedded{c: c, addrs: c.ListenAddrs(), dir: dir}, nil
}

func (e *embedded) close() { e.c.Close() }
