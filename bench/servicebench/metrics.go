package servicebench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/output"
	"github.com/prometheus/client_golang/prometheus"
)

// gatherService reads the stage times and the match counts from the
// service's metrics.
func gatherService(reg *prometheus.Registry, res *Result) error {
	mfs, err := reg.Gather()
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	stages := map[string]float64{}
	var order []string
	byQuery := map[string]*QueryMatches{}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "gcsm_batch_seconds":
			for _, m := range mf.GetMetric() {
				st := labelOf(m.GetLabel(), "stage")
				if _, ok := stages[st]; !ok {
					order = append(order, st)
				}
				stages[st] += m.GetHistogram().GetSampleSum()
			}
		case "gcsm_output_step_seconds":
			for _, m := range mf.GetMetric() {
				res.OutputSteps = append(res.OutputSteps, StageShare{Stage: labelOf(m.GetLabel(), "step"), Seconds: m.GetHistogram().GetSampleSum()})
			}
		case "gcsm_run_loop_idle_seconds_total":
			for _, m := range mf.GetMetric() {
				res.LoopIdle += m.GetCounter().GetValue()
			}
		case "gcsm_matches_total":
			for _, m := range mf.GetMetric() {
				q := labelOf(m.GetLabel(), "query")
				if byQuery[q] == nil {
					byQuery[q] = &QueryMatches{Query: q}
				}
				if labelOf(m.GetLabel(), "change") == output.Appeared {
					byQuery[q].Appeared += int64(m.GetCounter().GetValue())
				} else {
					byQuery[q].Disappeared += int64(m.GetCounter().GetValue())
				}
			}
		case "gcsm_query_batches_total":
			for _, m := range mf.GetMetric() {
				q := labelOf(m.GetLabel(), "query")
				if byQuery[q] == nil {
					byQuery[q] = &QueryMatches{Query: q}
				}
				d := incremental.OnCPU
				if labelOf(m.GetLabel(), "device") == incremental.OnGPU.String() {
					d = incremental.OnGPU
				}
				byQuery[q].AddBatch(d, int64(m.GetCounter().GetValue()))
			}
		}
	}
	var total float64
	for _, v := range stages {
		total += v
	}
	// Pipeline order, then any stage this list does not know.
	slices.SortStableFunc(order, func(a, b string) int { return stageRank(a) - stageRank(b) })
	for _, st := range order {
		sh := StageShare{Stage: st, Seconds: stages[st]}
		if total > 0 {
			sh.Share = stages[st] / total
		}
		res.Stages = append(res.Stages, sh)
	}
	steps := []string{"build", "log", "send", "acknowledge", "transaction"}
	slices.SortFunc(res.OutputSteps, func(a, b StageShare) int {
		return slices.Index(steps, a.Stage) - slices.Index(steps, b.Stage)
	})
	for _, q := range res.Queries {
		name, _, _ := strings.Cut(q, "=")
		m := QueryMatches{Query: name}
		if byQuery[name] != nil {
			m = *byQuery[name]
		}
		res.Matches = append(res.Matches, m)
	}
	return nil
}

var stageOrder = []string{"decode", "apply", "estimate", "upload", "match", "reorganize", "output", "commit"}

func stageRank(s string) int {
	if i := slices.Index(stageOrder, s); i >= 0 {
		return i
	}
	return len(stageOrder)
}

func labelOf[L interface {
	GetName() string
	GetValue() string
}](ls []L, name string) string {
	for _, l := range ls {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
