package output

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// DialAddr is the address to dial for a listen address: an unspecified
// host (":9092", "0.0.0.0:9092") is served on loopback too.
func DialAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// EmbeddedClusterID reads the cluster id that kfake records in meta.json
// of its data directory.
func EmbeddedClusterID(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s holds no broker log", dir)
	}
	if err != nil {
		return "", err
	}
	var meta struct {
		ClusterID string `json:"cluster_id"`
	}
	if err := json.Unmarshal(b, &meta); err != nil || meta.ClusterID == "" {
		return "", fmt.Errorf("%s: no cluster_id (%v)", filepath.Join(dir, "meta.json"), err)
	}
	return meta.ClusterID, nil
}

// ClusterID asks the broker at addr for its cluster id. A second is ample
// on loopback and short for a user waiting on nothing.
func ClusterID(ctx context.Context, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	cl, err := kafkaconn.Plaintext(addr).NewClient()
	if err != nil {
		return "", err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	md, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", err
	}
	if md.ClusterID == nil {
		return "", nil
	}
	return *md.ClusterID, nil
}

// EmbeddedCopy serves a copy of the embedded broker's log of topic, kept
// in the broker's data directory dir, from a temporary kfake on a free
// loopback port, and returns what stops it. kfake takes no lock on its data
// directory and rewrites files in it (on load, compaction and close), so
// opening the directory itself could corrupt the log of a gcsm that starts
// meanwhile, or lose its newest writes when the copy closes. Only the
// cluster's metadata and topic's partitions are copied, not the input
// topic's log.
func EmbeddedCopy(dir, topic string) (kafkaconn.Conn, func(), error) {
	tmp, err := os.MkdirTemp("", "gcsm-tail-")
	if err != nil {
		return kafkaconn.Conn{}, nil, err
	}
	fail := func(err error) (kafkaconn.Conn, func(), error) {
		os.RemoveAll(tmp)
		return kafkaconn.Conn{}, nil, fmt.Errorf("cannot copy the broker log of %s: %w", dir, err)
	}
	for _, name := range []string{"meta.json", "topics.json", "broker_configs.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, name), b, 0o600)
		}
		if err != nil {
			return fail(err)
		}
	}
	// kfake keeps partition p of a topic in partitions/<url.PathEscape(topic)>-<p>.
	parts, err := os.ReadDir(filepath.Join(dir, "partitions"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	prefix := url.PathEscape(topic) + "-"
	for _, e := range parts {
		p, ok := strings.CutPrefix(e.Name(), prefix)
		if _, err := strconv.ParseUint(p, 10, 31); !ok || err != nil || !e.IsDir() {
			continue
		}
		rel := filepath.Join("partitions", e.Name())
		if err := os.CopyFS(filepath.Join(tmp, rel), os.DirFS(filepath.Join(dir, rel))); err != nil {
			return fail(err)
		}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(tmp))
	if err != nil {
		return fail(err)
	}
	return kafkaconn.Plaintext(c.ListenAddrs()...), func() { c.Close(); os.RemoveAll(tmp) }, nil
}
