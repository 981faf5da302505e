package api

import (
	"context"
	"sync"

	"github.com/habilis-router/habilis/selector"
	"github.com/prometheus/client_golang/prometheus"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// CatalogServiceName is the health service that says whether a following
// server (Follow) sees its store: SERVING while its checks succeed,
// NOT_SERVING while they fail, when it keeps serving the catalog it had,
// under ServiceName, so that replicas behind a load balancer stay in
// rotation while the store is away. A server that does not follow does
// not report it.
const CatalogServiceName = "habilis.v1.Catalog"

// followMetrics count what Follow sees, once it runs.
type followMetrics struct {
	once     sync.Once
	up       prometheus.Gauge
	failures prometheus.Counter
	reloads  prometheus.Counter
	// seen is the number of reloads already counted.
	seen int
}

func (m *metrics) following() *followMetrics {
	f := &m.follow
	f.once.Do(func() {
		f.up = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "habilis_catalog_follow_up",
			Help: "1 while the server's last check of its store succeeded, 0 while its checks fail (it serves the catalog it has).",
		})
		f.failures = prometheus.NewCounter(prometheus.CounterOpts{
			Name: "habilis_catalog_follow_failures_total",
			Help: "Checks of the store that failed (store unreachable, or a catalog the server cannot serve).",
		})
		f.reloads = prometheus.NewCounter(prometheus.CounterOpts{
			Name: "habilis_catalog_reloads_total",
			Help: "Catalogs written by others that the server swapped in from its store.",
		})
		m.reg.MustRegister(f.up, f.failures, f.reloads)
		f.up.Set(1)
	})
	return f
}

// followed records one status Follow reported.
func (f *followMetrics) followed(st selector.FollowStatus) {
	if st.Err != nil {
		f.up.Set(0)
		f.failures.Inc()
	} else {
		f.up.Set(1)
	}
	if n := st.Reloads - f.seen; n > 0 {
		f.reloads.Add(float64(n))
		f.seen = st.Reloads
	}
}

// Follow keeps the server's catalog that of its store, whoever writes it,
// as selector.Router.Follow does with opts, until ctx ends: run it beside
// Serve, one per server. It reports how following goes through the
// health of CatalogServiceName, the metrics habilis_catalog_follow_up,
// habilis_catalog_follow_failures_total and habilis_catalog_reloads_total,
// and the health of ServiceName, which turns SERVING once a catalog
// written elsewhere arrives. opts.Report, when set, is called as well.
func (s *Server) Follow(ctx context.Context, opts selector.FollowOptions) {
	fm := s.metrics.following()
	s.health.SetServingStatus(CatalogServiceName, healthpb.HealthCheckResponse_SERVING)
	report := opts.Report
	opts.Report = func(st selector.FollowStatus) {
		fm.followed(st)
		s.updateHealth()
		h := healthpb.HealthCheckResponse_SERVING
		if st.Err != nil {
			h = healthpb.HealthCheckResponse_NOT_SERVING
		}
		s.health.SetServingStatus(CatalogServiceName, h)
		if report != nil {
			report(st)
		}
	}
	s.r.Follow(ctx, opts)
}
