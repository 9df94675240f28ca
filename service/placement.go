package service

import "github.com/gcsm/gcsm/incremental"

// placer is an executor that runs each query on the CPU or the GPU, batch by
// batch (incremental.Placer, under engine.device auto on a GPU machine).
type placer interface {
	Placed(dst []incremental.Device) []incremental.Device
}

// countPlacement adds the batch to query_batches_total, per query, on the
// device that ran it (the Placer's choice, or the one executor's device),
// and notes that device for GET /queries.
func (s *Service) countPlacement() {
	var placed []incremental.Device
	if p, ok := s.matcher.(placer); ok {
		placed = p.Placed(nil)
	}
	whole := incremental.OnGPU
	if _, ok := s.matcher.(*incremental.CPU); ok {
		whole = incremental.OnCPU
	}
	for i, st := range s.queries {
		d := whole
		if i < len(placed) {
			d = placed[i]
		}
		s.met.queryBatches.WithLabelValues(st.cfg.Name, d.String()).Inc()
		st.device = d.String()
	}
}

// gpuOf is the executor that reads the GPU's stats: the matcher, or the
// Placer's GPU side.
func (s *Service) gpuOf() incremental.Matcher {
	if p, ok := s.matcher.(*incremental.Placer); ok {
		return p.GPU
	}
	return s.matcher
}
