package api

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habilis-router/habilis/embed/lexical"
)

// synthTools returns n OpenAI function tools named after a domain, an
// action and an object, each with a sentence of description and two
// arguments, about 360 bytes apiece; the same n gives the same tools.
func synthTools(n int) []byte {
	domains := strings.Fields(`calendar email crm billing payroll inventory shipping weather maps travel flights hotel
		recipe fitness pharmacy bank stocks insurance tax hr ticketing support contacts notes docs spreadsheet photos
		music news translate currency github jira kubernetes database analytics monitoring storage backup garden parking`)
	actions := strings.Fields(`create update delete list find get send cancel schedule book archive export share
		summarize convert check track approve assign close merge restore rename`)
	objects := strings.Fields(`event meeting reminder message invoice order payment refund report ticket issue task
		note document file folder photo playlist contact account team project budget booking subscription alert
		deployment dashboard route review comment label claim receipt shipment`)
	r := rand.New(rand.NewPCG(uint64(n), 1))
	type param struct {
		Type        string `json:"type"`
		Description string `json:"description"`
	}
	type function struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  struct {
			Type       string           `json:"type"`
			Properties map[string]param `json:"properties"`
			Required   []string         `json:"required"`
		} `json:"parameters"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	tools := make([]tool, n)
	seen := map[string]bool{}
	for i := range tools {
		d, a, o := domains[r.IntN(len(domains))], actions[r.IntN(len(actions))], objects[r.IntN(len(objects))]
		name := d + "_" + a + "_" + o
		for j := 2; seen[name]; j++ {
			name = fmt.Sprintf("%s_%s_%s_%d", d, a, o, j)
		}
		seen[name] = true
		f := function{Name: name, Description: fmt.Sprintf("%s%s a %s in the %s service, by its name or id, and say what changed.", strings.ToUpper(a[:1]), a[1:], o, d)}
		f.Parameters.Type = "object"
		f.Parameters.Properties = map[string]param{
			o + "_id": {"string", "The " + o + " to " + a},
			"note":    {"string", "Why, in a few words"},
		}
		f.Parameters.Required = []string{o + "_id"}
		tools[i] = tool{"function", f}
	}
	b, _ := json.Marshal(tools)
	return b
}

// BenchmarkProxy measures the latency the proxy adds to a chat request
// with n tools: each iteration sends the same request to an upstream
// directly and through the proxy, in turn, over loopback with kept-alive
// connections. The upstream answers at once, as a model never does, so
// the difference is the proxy's own: reading the request, choosing 5 tools
// from its catalog (indexed on first sight and cached), rewriting it and
// relaying the answer. It reports the p50 and p99 of both paths and the
// added p50 (the median of the paired differences) and p99:
//
//	go test -run XXX -bench 'Proxy/' -benchtime 2000x ./api
func BenchmarkProxy(b *testing.B) {
	for _, n := range []int{200, 2000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			up := serveHTTP(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, recordedAnswer)
			}))
			s := NewServer(newRouter(b, nil), ServerOptions{InlineEmbedder: lexical.New(lexical.Options{})})
			p, err := NewProxy(s, ProxyOptions{Upstream: up + "/v1"})
			if err != nil {
				b.Fatal(err)
			}
			proxy := serveHTTP(b, p)
			body := chatBody(synthTools(n), `[{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "please cancel the subscription of my billing account"}]`, "")
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			send := func(url string) time.Duration {
				start := time.Now()
				resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderOutcome) == OutcomeError {
					b.Fatalf("POST %s: %s, outcome %q", url, resp.Status, resp.Header.Get(HeaderOutcome))
				}
				return time.Since(start)
			}
			// The first request through the proxy indexes the tools.
			send(up)
			send(proxy)
			direct := make([]time.Duration, 0, b.N)
			via := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				if i%2 == 0 {
					direct = append(direct, send(up))
					via = append(via, send(proxy))
				} else {
					via = append(via, send(proxy))
					direct = append(direct, send(up))
				}
			}
			b.StopTimer()
			added := make([]time.Duration, b.N)
			for i := range added {
				added[i] = via[i] - direct[i]
			}
			us := func(d time.Duration) float64 { return float64(d) / 1e3 }
			b.ReportMetric(us(quantile(direct, 0.5)), "direct-p50-µs")
			b.ReportMetric(us(quantile(direct, 0.99)), "direct-p99-µs")
			b.ReportMetric(us(quantile(via, 0.5)), "proxy-p50-µs")
			b.ReportMetric(us(quantile(via, 0.99)), "proxy-p99-µs")
			b.ReportMetric(us(quantile(added, 0.5)), "added-p50-µs")
			b.ReportMetric(us(quantile(via, 0.99)-quantile(direct, 0.99)), "added-p99-µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// quantile returns the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
