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
	proxy       proxyMetrics
	// follow is registered when the server starts following its store.
	follow followMetrics
}

// proxyMetrics count what the chat proxy did (see Proxy).
type proxyMetrics struct {
	chats                   *prometheus.CounterVec
	toolsBefore, toolsAfter prometheus.Counter
	tokensSaved             prometheus.Counter
	latency                 prometheus.Histogram
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
	m.proxy = proxyMetrics{
		chats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "habilis_proxy_chat_requests_total",
			Help: "Chat completion and Responses API requests the proxy forwarded, by outcome (as in the X-Habilis-Outcome header).",
		}, []string{"outcome"}),
		toolsBefore: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "habilis_proxy_tools_before_total",
			Help: "Tools the proxied chat requests came with, summed.",
		}),
		toolsAfter: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "habilis_proxy_tools_after_total",
			Help: "Tools the proxied chat requests were forwarded with, summed.",
		}),
		tokensSaved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "habilis_proxy_tokens_saved_total",
			Help: "Estimated prompt tokens of the tool definitions the proxy cut (a quarter of their bytes).",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "habilis_proxy_selection_duration_seconds",
			Help:    "Time the proxy spends on a chat request before forwarding it: reading it, choosing its tools, rewriting it.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2.5, 14),
		}),
	}
	m.reg.MustRegister(
		m.requests, m.latency, m.abstentions,
		m.proxy.chats, m.proxy.toolsBefore, m.proxy.toolsAfter, m.proxy.tokensSaved, m.proxy.latency,
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

// proxied records one chat request the proxy forwarded.
func (m *metrics) proxied(p *chatPlan, d time.Duration) {
	m.proxy.chats.WithLabelValues(p.outcome).Inc()
	m.proxy.toolsBefore.Add(float64(p.before))
	m.proxy.toolsAfter.Add(float64(p.after))
	m.proxy.tokensSaved.Add(float64(p.tokensSaved))
	m.proxy.latency.Observe(d.Seconds())
	if p.decision != nil {
		m.decided("Proxy", p.decision)
	}
}
