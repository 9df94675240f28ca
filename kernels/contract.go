package kernels

import "github.com/gcsm/gcsm/incremental"

// SetStop implements incremental.Matcher. A kernel launch runs to its end,
// so a query's limit cannot cut it short; the caller's sink still stops
// keeping the query's matches once the limit is hit.
func (x *GPU) SetStop(func(q int) bool) {}

// Devices implements incremental.Matcher: every query runs on the GPU.
func (x *GPU) Devices(dst []incremental.Device, n int) []incremental.Device {
	return onGPU(dst, n)
}

// SetStop implements incremental.Matcher, as GPU.SetStop.
func (m *Multi) SetStop(func(q int) bool) {}

// Devices implements incremental.Matcher: every query runs on the GPUs.
func (m *Multi) Devices(dst []incremental.Device, n int) []incremental.Device {
	return onGPU(dst, n)
}

func onGPU(dst []incremental.Device, n int) []incremental.Device {
	for range n {
		dst = append(dst, incremental.OnGPU)
	}
	return dst
}
