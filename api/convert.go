package api

import (
	"encoding/json"
	"time"

	"github.com/habilis-router/habilis"
	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"github.com/habilis-router/habilis/selector"
)

// Conversions between habilis' types and the messages of habilis.proto.
// Each pair round-trips: what the server writes, the client reads back to
// the same value, nil slices as empty ones.

func decisionToProto(d *habilis.Decision) *habilisv1.SelectResponse {
	out := &habilisv1.SelectResponse{
		Query:     d.Query,
		Mode:      string(d.Mode),
		Abstained: d.Abstained,
		Reason:    d.Reason,
		Ambiguous: d.Ambiguous,
		Matches:   make([]*habilisv1.Match, len(d.Matches)),

		CatalogVersion: d.CatalogVersion,
	}
	for i := range d.Matches {
		m := &d.Matches[i]
		out.Matches[i] = &habilisv1.Match{
			Tool:             m.Tool,
			Score:            m.Score,
			CentroidScore:    m.CentroidScore,
			DescriptionScore: m.DescriptionScore,
			ExampleScore:     m.ExampleScore,
			Radius:           m.Radius,
			RadiusSource:     m.RadiusSource,
			Margin:           m.Margin,
			Passed:           m.Passed,
			Gate:             m.Gate,
			GateScore:        m.GateScore,
			Confidence:       m.Confidence,
			CollidesWith:     m.CollidesWith,
			Pinned:           m.Pinned,
		}
	}
	return out
}

func decisionFromProto(p *habilisv1.SelectResponse) *habilis.Decision {
	d := &habilis.Decision{
		Query:     p.GetQuery(),
		Mode:      habilis.Mode(p.GetMode()),
		Abstained: p.GetAbstained(),
		Reason:    p.GetReason(),
		Ambiguous: p.GetAmbiguous(),
		Matches:   make([]habilis.Match, len(p.GetMatches())),

		CatalogVersion: p.GetCatalogVersion(),
	}
	for i, m := range p.GetMatches() {
		d.Matches[i] = habilis.Match{
			Tool:             m.GetTool(),
			Score:            m.GetScore(),
			CentroidScore:    m.GetCentroidScore(),
			DescriptionScore: m.GetDescriptionScore(),
			ExampleScore:     m.GetExampleScore(),
			Radius:           m.GetRadius(),
			RadiusSource:     m.GetRadiusSource(),
			Margin:           m.GetMargin(),
			Passed:           m.GetPassed(),
			Gate:             m.GetGate(),
			GateScore:        m.GetGateScore(),
			Confidence:       m.GetConfidence(),
			CollidesWith:     nonNil(m.GetCollidesWith()),
			Pinned:           m.GetPinned(),
		}
	}
	return d
}

func toolToProto(t *habilis.Tool) *habilisv1.Tool {
	return &habilisv1.Tool{
		Name:            t.Name,
		Description:     t.Description,
		Examples:        t.Examples,
		InputSchemaJson: string(t.InputSchema),
		Margin:          t.Margin,
		ExecutorJson:    string(t.Executor),
		Meta:            t.Meta,
	}
}

// toolFromProto returns the tool a message describes, as given: the
// server validates tools by marshalling them and parsing the result with
// catalog.Parse, and the client reads tools the server produced.
func toolFromProto(p *habilisv1.Tool) habilis.Tool {
	t := habilis.Tool{
		Name:        p.GetName(),
		Description: p.GetDescription(),
		Examples:    p.GetExamples(),
		Meta:        p.GetMeta(),
	}
	if s := p.GetInputSchemaJson(); s != "" {
		t.InputSchema = json.RawMessage(s)
	}
	if s := p.GetExecutorJson(); s != "" {
		t.Executor = json.RawMessage(s)
	}
	if p.Margin != nil {
		m := p.GetMargin()
		t.Margin = &m
	}
	return t
}

func toolInfoToProto(ti *selector.ToolInfo) *habilisv1.GetToolResponse {
	return &habilisv1.GetToolResponse{
		Tool:              toolToProto(&ti.Tool),
		Hash:              ti.Hash,
		Radius:            ti.Radius,
		RadiusSource:      ti.RadiusSource,
		RadiusExample:     ti.RadiusExample,
		Margin:            ti.Margin,
		Threshold:         ti.Threshold,
		CollidesWith:      ti.CollidesWith,
		Gates:             gatesToProto(ti.Gates),
		FallbackGate:      ti.FallbackGate,
		GateScores:        gateScoresToProto(ti.GateScores),
		FallbackGateScore: ti.FallbackGateScore,
	}
}

func gatesToProto(g map[habilis.Mode]float32) map[string]float32 {
	out := make(map[string]float32, len(g))
	for m, x := range g {
		out[string(m)] = x
	}
	return out
}

func toolInfoFromProto(p *habilisv1.GetToolResponse) *selector.ToolInfo {
	return &selector.ToolInfo{
		Tool:              toolFromProto(p.GetTool()),
		Hash:              p.GetHash(),
		Radius:            p.GetRadius(),
		RadiusSource:      p.GetRadiusSource(),
		RadiusExample:     p.GetRadiusExample(),
		Margin:            p.GetMargin(),
		Threshold:         p.GetThreshold(),
		CollidesWith:      nonNil(p.GetCollidesWith()),
		Gates:             gatesFromProto(p.GetGates()),
		FallbackGate:      p.GetFallbackGate(),
		GateScores:        gateScoresFromProto(p.GetGateScores()),
		FallbackGateScore: p.GetFallbackGateScore(),
	}
}

func gatesFromProto(g map[string]float32) map[habilis.Mode]float32 {
	out := make(map[habilis.Mode]float32, len(g))
	for m, x := range g {
		out[habilis.Mode(m)] = x
	}
	return out
}

func reportToProto(r *selector.LoadReport) *habilisv1.WriteReport {
	return &habilisv1.WriteReport{
		Added:          r.Added,
		Updated:        r.Updated,
		Removed:        r.Removed,
		Unchanged:      int32(r.Unchanged),
		Embedded:       int32(r.Embedded),
		Reused:         int32(r.Reused),
		Version:        r.Version,
		Tools:          int32(r.Tools),
		Examples:       int32(r.Examples),
		MedianExamples: int32(r.MedianExamples),
		BareTools:      int32(r.Bare),
		DurationNs:     int64(r.Duration),
	}
}

func reportFromProto(p *habilisv1.WriteReport) *selector.LoadReport {
	return &selector.LoadReport{
		Added:          nonNil(p.GetAdded()),
		Updated:        nonNil(p.GetUpdated()),
		Removed:        nonNil(p.GetRemoved()),
		Unchanged:      int(p.GetUnchanged()),
		Embedded:       int(p.GetEmbedded()),
		Reused:         int(p.GetReused()),
		Version:        p.GetVersion(),
		Tools:          int(p.GetTools()),
		Examples:       int(p.GetExamples()),
		MedianExamples: int(p.GetMedianExamples()),
		Bare:           int(p.GetBareTools()),
		Duration:       time.Duration(p.GetDurationNs()),
	}
}

func collisionToProto(c *habilis.Collision) *habilisv1.Collision {
	out := &habilisv1.Collision{
		A:                  c.A,
		B:                  c.B,
		CentroidSimilarity: c.CentroidSimilarity,
		Overlap:            c.Overlap,
		Leaks:              make([]*habilisv1.Leak, len(c.Leaks)),
		Severity:           string(c.Severity),
		MisroutesAToB:      int32(c.MisroutesAB),
		MisroutesBToA:      int32(c.MisroutesBA),
		MisrouteRate:       c.MisrouteRate,
		NearestAToB:        int32(c.NearestAB),
		NearestBToA:        int32(c.NearestBA),
	}
	for i, l := range c.Leaks {
		out.Leaks[i] = &habilisv1.Leak{
			From: l.From, Into: l.Into, Example: l.Example,
			Score: l.Score, OwnScore: l.OwnScore,
			RanksFirst: l.RanksFirst, PassesGate: l.PassesGate,
		}
	}
	return out
}

func collisionFromProto(p *habilisv1.Collision) habilis.Collision {
	c := habilis.Collision{
		A:                  p.GetA(),
		B:                  p.GetB(),
		CentroidSimilarity: p.GetCentroidSimilarity(),
		Overlap:            p.GetOverlap(),
		Leaks:              make([]habilis.Leak, len(p.GetLeaks())),
		Severity:           habilis.Severity(p.GetSeverity()),
		MisroutesAB:        int(p.GetMisroutesAToB()),
		MisroutesBA:        int(p.GetMisroutesBToA()),
		MisrouteRate:       p.GetMisrouteRate(),
		NearestAB:          int(p.GetNearestAToB()),
		NearestBA:          int(p.GetNearestBToA()),
	}
	for i, l := range p.GetLeaks() {
		c.Leaks[i] = habilis.Leak{
			From: l.GetFrom(), Into: l.GetInto(), Example: l.GetExample(),
			Score: l.GetScore(), OwnScore: l.GetOwnScore(),
			RanksFirst: l.GetRanksFirst(), PassesGate: l.GetPassesGate(),
		}
	}
	return c
}

// nonNil returns s, or an empty slice for nil: JSON output shows [] as the
// router's own values do.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func gateScoresToProto(g map[habilis.Mode]string) map[string]string {
	out := make(map[string]string, len(g))
	for m, x := range g {
		out[string(m)] = x
	}
	return out
}

func gateScoresFromProto(g map[string]string) map[habilis.Mode]string {
	out := make(map[habilis.Mode]string, len(g))
	for m, x := range g {
		out[habilis.Mode(m)] = x
	}
	return out
}
