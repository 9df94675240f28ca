package ingest

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkKafkaRead measures reading one partition with kgo's PollFetches, as Generation.Read does,
// with a 16 MiB fetch. The in-process broker answers every fetch
// from one canned record batch of 100-byte values (a JSON transfer's size), so the figure is the
// client's cost with the broker's storage left out; cpu-ns/record counts every core's work, which on a
// loaded machine says more than ns/record.
func BenchmarkKafkaRead(b *testing.B) {
	for _, codec := range []string{"none", "lz4"} {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "edges"),
			kfake.SyntheticFetch(kfake.SyntheticBatch{RecordBytes: 100, RandomFrac: 0.5,
				Compression: map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "lz4": kgo.Lz4Compression()}[codec]}))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		b.Run(fmt.Sprintf("client=franz-go/compression=%s", codec), func(b *testing.B) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"edges": {0: kgo.NewOffset().AtStart()}}),
				kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(16<<20), kgo.FetchMaxWait(100*time.Millisecond))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			var left []*kgo.Record // records of the last poll past the previous run's count
			poll := func(n int) {
				for n > 0 {
					if len(left) == 0 {
						fs := cl.PollFetches(ctx)
						if err := fs.Err0(); err != nil {
							b.Fatal(err)
						}
						left = fs.Records()
					}
					take := min(n, len(left))
					left, n = left[take:], n-take
				}
			}
			poll(1) // connects
			readBench(b, poll)
		})
	}
}

// readBench times read(b.N) and reports per-record figures.
func readBench(b *testing.B, read func(n int)) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu, start := cpuTime(b), time.Now()
	read(b.N)
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/record")
}

// BenchmarkGenerationRead measures Generation.Read, as the service consumes, on the canned fetches of
// BenchmarkKafkaRead: records from the group's generation to the receiving end of the channel.
func BenchmarkGenerationRead(b *testing.B) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "edges"),
		kfake.SyntheticFetch(kfake.SyntheticBatch{RecordBytes: 100, RandomFrac: 0.5}))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	cons, err := NewConsumer(ConsumerConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "edges", Group: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gen, err := cons.Next(ctx)
	if err != nil {
		b.Fatal(err)
	}
	out := make(chan []Message, 4096/MaxChunk)
	rd := gen.Read(ctx, nil, out)
	pending := <-out // connects
	readBench(b, func(n int) {
		for n > 0 {
			if len(pending) == 0 {
				pending = <-out
			}
			k := min(n, len(pending))
			pending, n = pending[k:], n-k
		}
	})
	cancel()
	for range out {
	}
	if err := rd.Wait(); err != nil {
		b.Fatal(err)
	}
	rd.Release()
}
