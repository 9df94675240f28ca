package kernels

import (
	"sync"
	"testing"
	"time"

	"github.com/gcsm/gcsm/kernels/cuda"
)

// openDriver is cuda.Open timed on its first call, which is the only one
// that loads and initialises the driver: the testing package calls a
// benchmark more than once.
var openDriver = sync.OnceValues(func() (driverOpen, error) {
	t0 := time.Now()
	d, err := cuda.Open()
	return driverOpen{d, time.Since(t0).Seconds()}, err
})

type driverOpen struct {
	d     *cuda.Driver
	initS float64
}

// BenchmarkStartup takes apart what a process pays before its first batch
// on the GPU: the driver's load and cuInit (once per process, so timed once,
// before the loop), then per iteration a context, the embedded module's load
// and the rest of Open, and Close. Each stage is a metric in seconds.
func BenchmarkStartup(b *testing.B) {
	o, err := openDriver()
	if err != nil {
		b.Skipf("no GPU: %v", err)
	}
	d, initS := o.d, o.initS
	dev, err := d.Device(0)
	if err != nil {
		b.Fatal(err)
	}
	var ctxS, modS, openS, closeS float64
	for range b.N {
		t0 := time.Now()
		ctx, err := dev.Context()
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		m, err := ctx.LoadModule(matchImage)
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
		if err := ctx.Close(); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		x, err := Open(Options{})
		if err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		if err := x.Close(); err != nil {
			b.Fatal(err)
		}
		t5 := time.Now()
		ctxS += t1.Sub(t0).Seconds()
		modS += t2.Sub(t1).Seconds()
		openS += t4.Sub(t3).Seconds()
		closeS += t5.Sub(t4).Seconds()
	}
	n := float64(b.N)
	b.ReportMetric(initS, "driver-init-s")
	b.ReportMetric(ctxS/n, "context-s")
	b.ReportMetric(modS/n, "module-load-s")
	b.ReportMetric(openS/n, "open-s")
	b.ReportMetric(closeS/n, "close-s")
}
