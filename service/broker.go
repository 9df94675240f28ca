package service

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/gcsm/gcsm/internal/statedir"
)

// embedded is the in-process Kafka-protocol broker that gcsm run starts
// when no brokers are configured, so one machine needs no servers. It is
// franz-go's kfake, persisting its log under the state directory, so a
// restarted gcsm finds its input and committed offsets again.
type embedded struct {
	c     *kfake.Cluster
	addrs []string
	dir   string
	lock  *statedir.Lock // of logLockName beside dir, held until close
	stop  chan struct{}  // closed by close, ends the retention loop
	done  chan struct{}  // closed when the retention loop has ended
}

// retentionEvery is how often the embedded broker drops records past its
// retention: kfake applies retention only when asked.
var retentionEvery = 10 * time.Second

func startEmbedded(cfg Config, sec BrokerSecurity, extraTopics ...string) (*embedded, error) {
	host, port, err := net.SplitHostPort(cfg.Embedded.Listen)
	if err != nil {
		return nil, fmt.Errorf("embedded.listen %q: %w", cfg.Embedded.Listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("embedded.listen %q: bad port", cfg.Embedded.Listen)
	}
	dir := filepath.Join(cfg.State.Dir, "kafka")
	lock, err := lockLog(cfg.State.Dir)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lock.Unlock()
		}
	}()
	topics := []string{cfg.Input.Topic, cfg.Output.Topic}
	if cfg.Output.DeadLetterTopic != "" {
		topics = append(topics, cfg.Output.DeadLetterTopic)
	}
	topics = append(topics, extraTopics...)
	opts := []kfake.Opt{
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
		kfake.ClusterID("gcsm-" + rand.Text()),
		kfake.SeedTopics(int32(cfg.Embedded.Partitions), topics...),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(cfg.Embedded.Partitions),
		kfake.BrokerConfigs(retentionConfigs(cfg.Embedded)),
	}
	if sec.TLS != nil {
		opts = append(opts, kfake.TLS(sec.TLS))
	}
	if len(sec.Users) > 0 {
		opts = append(opts, kfake.EnableSASL())
		for _, u := range sec.Users {
			opts = append(opts, kfake.Superuser(u.Mechanism, u.User, u.Password))
		}
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("embedded broker on %s: %w", cfg.Embedded.Listen, err)
	}
	e := &embedded{c: c, addrs: c.ListenAddrs(), dir: dir, lock: lock, stop: make(chan struct{}), done: make(chan struct{})}
	go e.retain(cfg.Embedded)
	ok = true
	return e, nil
}

// logLockName is the lock of the broker's log, beside kafka/ rather than in
// it, where kfake owns the names. It is not statedir.LockName, the
// service's: a service with external brokers and gcsm broker --data on the
// same directory, each owning its part, is the layout gcsm run itself
// uses, while two brokers on one log would both append to its segments.
const logLockName = "kafka.lock"

// lockLog locks the broker's log under the state directory stateDir.
func lockLog(stateDir string) (*statedir.Lock, error) {
	if err := os.MkdirAll(stateDir, 0o750); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	lock, err := statedir.LockFile(filepath.Join(stateDir, logLockName))
	if err != nil {
		var held *statedir.LockedError
		if errors.As(err, &held) {
			return nil, fmt.Errorf("embedded broker: its log %s is in use: %w; one broker per log: stop that process, or give this one another state directory",
				filepath.Join(stateDir, "kafka"), err)
		}
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	return lock, nil
}

// retentionConfigs are the broker settings for the configured retention.
// kfake deletes a segment file only once every record in it has expired,
// and rolls segments by size only, so segments are kept to an eighth of
// the byte cap: the disk then holds at most 9/8 of it per partition.
func retentionConfigs(c EmbeddedConfig) map[string]string {
	ms, bytes, seg := int64(-1), int64(-1), int64(100<<20)
	if c.Retention > 0 {
		ms = c.Retention.Milliseconds()
	}
	if c.RetentionBytes > 0 {
		bytes = int64(c.RetentionBytes)
		seg = min(seg, max(bytes/8, 64<<10))
	}
	return map[string]string{
		"log.retention.ms":    strconv.FormatInt(ms, 10),
		"log.retention.bytes": strconv.FormatInt(bytes, 10),
		"log.segment.bytes":   strconv.FormatInt(seg, 10),
	}
}

// retain applies the retention every retentionEvery until close.
func (e *embedded) retain(c EmbeddedConfig) {
	defer close(e.done)
	if c.Retention <= 0 && c.RetentionBytes <= 0 {
		return
	}
	t := time.NewTicker(retentionEvery)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			e.c.ApplyRetention()
		}
	}
}

func (e *embedded) close() {
	close(e.stop)
	<-e.done
	e.c.Close()
	e.lock.Unlock()
}
