package service

import (
	"context"
	"crypto/rand"
	"io/fs"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// dirBytes is the size of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// fill produces n records of size bytes to topic, synchronously.
func fill(t *testing.T, addrs []string, topic string, n, size int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		// Random bytes, which the producer's compression cannot shrink.
		v := make([]byte, size)
		rand.Read(v)
		r := &kgo.Record{Topic: topic, Value: append(strconv.AppendInt(nil, int64(i), 10), v...)}
		if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// firstOffset is the offset of the first record a fresh consumer reads from
// the start of topic.
func firstOffset(t *testing.T, addrs []string, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		f := cl.PollRecords(ctx, 1)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record in %s: %v", topic, err)
		}
		if recs := f.Records(); len(recs) > 0 {
			return recs[0].Offset
		}
	}
}

// TestEmbeddedRetention writes several times the byte cap into the embedded
// broker and checks that its data directory stays within the cap plus a
// segment, that the newest records are kept, and that the time limit drops
// old records too.
func TestEmbeddedRetention(t *testing.T) {
	defer func(d time.Duration) { retentionEvery = d }(retentionEvery)
	retentionEvery = 20 * time.Millisecond
	const limit = 1 << 20
	for _, tc := range []struct {
		name      string
		retention time.Duration
		bytes     ByteSize
	}{
		{"bytes", 0, limit},
		{"time", time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, nil)
			cfg.Brokers = nil
			cfg.Embedded = EmbeddedConfig{Listen: "127.0.0.1:0", Partitions: 1, Retention: tc.retention, RetentionBytes: tc.bytes}
			e, err := startEmbedded(cfg, BrokerSecurity{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.close()
			const n, size = 400, 16 << 10 // 6.4 MB, over six times the cap
			fill(t, e.addrs, cfg.Input.Topic, n/2, size)
			if tc.retention > 0 {
				time.Sleep(tc.retention + 100*time.Millisecond) // the first half expires
			}
			fill(t, e.addrs, cfg.Input.Topic, n/2, size)
			part := filepath.Join(e.dir, cfg.Input.Topic)
			waitFor(t, "retention to drop the old records", 10*time.Second, func() bool {
				return firstOffset(t, e.addrs, cfg.Input.Topic) > 0
			})
			time.Sleep(5 * retentionEvery)
			got := dirBytes(t, e.dir)
			bound := int64(limit + limit/8 + 64<<10) // the cap, a segment, and the broker's own small files
			if tc.retention > 0 {
				bound = int64(n/2*size + 1<<20) // the second half, with its last segment
			}
			if got > bound {
				t.Errorf("data directory holds %d bytes (%s: %d), over %d", got, part, dirBytes(t, part), bound)
			}
			if off := firstOffset(t, e.addrs, cfg.Input.Topic); tc.retention > 0 && off > n/2 {
				t.Errorf("the time limit dropped records up to %d, of the %d that had not expired", off, n/2)
			}
		})
	}
}
