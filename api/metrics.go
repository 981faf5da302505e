package api

import (
	"net/http"
	"time"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"
)

// metrics are a server's Prometheus metrics, in a registry of its own (no
// global state: two servers in one process count apart).
type metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	abstentions *prometheus.CounterVec
}

func newMetrics(r *selector.Router) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "habilis_grpc_requests_total",
			Help: "gRPC calls handled, by full method and status code.",
		}, []string{"method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "habilis_grpc_request_duration_seconds",
			Help: "Time to handle a gRPC call, by full method.",
			// 25 µs to about 6 s: selections take tens of microseconds,
			// loads and collision reports seconds.
			Buckets: prometheus.ExponentialBuckets(25e-6, 2.5, 14),
		}, []string{"method"}),
		abstentions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "habilis_abstentions_total",
			Help: "Decisions in which the router abstained (no tool fits), by method.",
		}, []string{"method"}),
	}
	m.reg.MustRegister(
		m.requests, m.latency, m.abstentions,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "habilis_catalog_tools",
			Help: "Tools in the served catalog.",
		}, func() float64 { return float64(len(r.Tools())) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "habilis_catalog_version",
			Help: "Version of the served catalog; it grows by one with every write.",
		}, func() float64 { return float64(r.Version()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// observe records one finished call.
func (m *metrics) observe(method string, code codes.Code, d time.Duration) {
	m.requests.WithLabelValues(method, code.String()).Inc()
	m.latency.WithLabelValues(method).Observe(d.Seconds())
}

// decided counts an abstention.
func (m *metrics) decided(method string, d *habilis.Decision) {
	if d.Abstained {
		m.abstentions.WithLabelValues(method).Inc()
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
