package service

import "github.com/gcsm/gcsm/incremental"

// countPlacement adds the batch to query_batches_total, per query, on the
// device that ran it (engine.Step.Devices: the Placer's choice, or the
// one executor's device), and notes that device for GET /queries.
func (s *Service) countPlacement(placed []incremental.Device) {
	for i, st := range s.queries {
		d := incremental.OnCPU
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
