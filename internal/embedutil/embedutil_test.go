package embedutil

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/habilis-router/habilis"
)

// echo embeds text "n" as the vector (n, 1), so tests can see which text
// each vector belongs to.
func echo(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		n, err := strconv.Atoi(strings.TrimPrefix(t, "p:"))
		if err != nil {
			return nil, err
		}
		out[i] = []float32{float32(n), 1}
	}
	return out, nil
}

func numbers(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}

func TestEmbedBatchesInOrder(t *testing.T) {
	tests := []struct {
		texts, batch, concurrency int
		wantRequests              int64
	}{
		{texts: 1, batch: 0, concurrency: 0, wantRequests: 1},
		{texts: 64, batch: 0, concurrency: 0, wantRequests: 1},
		{texts: 65, batch: 0, concurrency: 0, wantRequests: 2},
		{texts: 100, batch: 7, concurrency: 3, wantRequests: 15},
		{texts: 10, batch: 1, concurrency: 20, wantRequests: 10},
	}
	for _, tt := range tests {
		var requests, inFlight, maxInFlight atomic.Int64
		b := New(Options{BatchSize: tt.batch, Concurrency: tt.concurrency}, func(ctx context.Context, texts []string) ([][]float32, error) {
			requests.Add(1)
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				m := maxInFlight.Load()
				if n <= m || maxInFlight.CompareAndSwap(m, n) {
					break
				}
			}
			if limit := cmp.Or(tt.batch, 64); len(texts) > limit {
				return nil, fmt.Errorf("batch of %d texts, want at most %d", len(texts), limit)
			}
			return echo(ctx, texts)
		})
		vs, err := b.Embed(context.Background(), numbers(tt.texts), "p:")
		if err != nil {
			t.Fatalf("Embed(%d texts, batch %d) error: %v", tt.texts, tt.batch, err)
		}
		for i, v := range vs {
			want := []float32{float32(i), 1}
			norm := float32(math.Hypot(float64(i), 1))
			want[0], want[1] = want[0]/norm, want[1]/norm
			if diff := gocmp.Diff(want, v.Dense, gocmp.Comparer(func(a, b float32) bool { return math.Abs(float64(a-b)) < 1e-6 })); diff != "" {
				t.Errorf("Embed(%d texts, batch %d)[%d] = %v, want %v", tt.texts, tt.batch, i, v.Dense, want)
			}
		}
		if got := requests.Load(); got != tt.wantRequests {
			t.Errorf("Embed(%d texts, batch %d) sent %d requests, want %d", tt.texts, tt.batch, got, tt.wantRequests)
		}
		limit := int64(tt.concurrency)
		if limit == 0 {
			limit = 2
		}
		if got := maxInFlight.Load(); got > limit {
			t.Errorf("Embed(%d texts, concurrency %d) had %d requests in flight, want at most %d", tt.texts, tt.concurrency, got, limit)
		}
		if got := b.Dim(); got != 2 {
			t.Errorf("Dim() = %d, want 2", got)
		}
	}
}

func TestEmbedNoTexts(t *testing.T) {
	b := New(Options{}, func(context.Context, []string) ([][]float32, error) {
		return nil, errors.New("no request expected")
	})
	vs, err := b.Embed(context.Background(), nil, "")
	if err != nil || len(vs) != 0 {
		t.Errorf("Embed(nil) = %v, %v, want no vectors and no error", vs, err)
	}
}

func TestEmbedRetries(t *testing.T) {
	transient := Retry(Mark(errors.New("server error: HTTP 503"), habilis.ErrUnavailable), 0)
	permanent := Mark(errors.New("server refused the request: HTTP 400"), habilis.ErrInvalid)
	tests := []struct {
		name         string
		retries      int
		failures     []error // returned by the first requests, in turn
		wantErr      error
		wantRequests int
	}{
		{"recovers", 0, []error{transient, transient}, nil, 3},
		{"gives up after default retries", 0, []error{transient, transient, transient, transient, transient}, habilis.ErrUnavailable, 4},
		{"no retries", -1, []error{transient}, habilis.ErrUnavailable, 1},
		{"more retries", 5, []error{transient, transient, transient, transient, transient}, nil, 6},
		{"permanent not retried", 0, []error{permanent}, habilis.ErrInvalid, 1},
	}
	for _, tt := range tests {
		requests := 0
		b := New(Options{Retries: tt.retries, Backoff: time.Microsecond}, func(ctx context.Context, texts []string) ([][]float32, error) {
			requests++
			if requests <= len(tt.failures) {
				return nil, tt.failures[requests-1]
			}
			return echo(ctx, texts)
		})
		_, err := b.Embed(context.Background(), []string{"1"}, "")
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("%s: Embed() = %v, want %v", tt.name, err, tt.wantErr)
		}
		if requests != tt.wantRequests {
			t.Errorf("%s: Embed() sent %d requests, want %d", tt.name, requests, tt.wantRequests)
		}
	}
}

func TestEmbedTimeoutIsTransient(t *testing.T) {
	requests := 0
	b := New(Options{Timeout: time.Millisecond, Retries: 2, Backoff: time.Microsecond}, func(ctx context.Context, texts []string) ([][]float32, error) {
		requests++
		<-ctx.Done()
		return nil, ctx.Err()
	})
	_, err := b.Embed(context.Background(), []string{"1"}, "")
	if !errors.Is(err, habilis.ErrUnavailable) || !strings.Contains(err.Error(), "no answer within 1ms") {
		t.Errorf("Embed() against a silent server = %v, want ErrUnavailable saying no answer within 1ms", err)
	}
	if requests != 3 {
		t.Errorf("Embed() sent %d requests, want 3", requests)
	}
}

func TestEmbedCancelStopsRetrying(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	requests := 0
	b := New(Options{Backoff: time.Hour}, func(context.Context, []string) ([][]float32, error) {
		requests++
		cancel() // the caller gives up while the request fails
		return nil, Retry(errors.New("server error"), 0)
	})
	_, err := b.Embed(ctx, []string{"1"}, "")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Embed() cancelled during a retry = %v, want context.Canceled", err)
	}
	if requests != 1 {
		t.Errorf("Embed() sent %d requests, want 1", requests)
	}
}

func TestEmbedFailureCancelsOtherBatches(t *testing.T) {
	var mu sync.Mutex
	seen := 0
	b := New(Options{BatchSize: 1, Concurrency: 1}, func(ctx context.Context, texts []string) ([][]float32, error) {
		mu.Lock()
		seen++
		mu.Unlock()
		if texts[0] == "3" {
			return nil, Mark(errors.New("refused"), habilis.ErrInvalid)
		}
		return echo(ctx, texts)
	})
	_, err := b.Embed(context.Background(), numbers(10), "")
	if !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Embed() = %v, want ErrInvalid", err)
	}
	if seen != 4 {
		t.Errorf("Embed() sent %d requests, want 4 (none after the failure)", seen)
	}
}

func TestEmbedChecksAnswers(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name   string
		dim    int
		answer [][]float32
		want   string
	}{
		{"count", 0, [][]float32{{1, 0}}, "server returned 1 vectors for 2 texts"},
		{"empty", 0, [][]float32{{1, 0}, {}}, "empty vector for text 1"},
		{"nan", 0, [][]float32{{1, 0}, {nan, 0}}, "vector with NaN for text 1"},
		{"zero", 0, [][]float32{{1, 0}, {0, 0}}, "zero vector for text 1"},
		{"dimension changes", 0, [][]float32{{1, 0}, {1, 0, 0}}, "dimension 3 for text 1, want 2"},
		{"configured dimension", 3, [][]float32{{1, 0}, {1, 0}}, "dimension 2 for text 0, want 3"},
	}
	for _, tt := range tests {
		b := New(Options{Dim: tt.dim}, func(context.Context, []string) ([][]float32, error) {
			return tt.answer, nil
		})
		_, err := b.Embed(context.Background(), []string{"a", "b"}, "")
		if !errors.Is(err, habilis.ErrInvalid) || !strings.Contains(fmt.Sprint(err), tt.want) {
			t.Errorf("%s: Embed() = %v, want ErrInvalid saying %q", tt.name, err, tt.want)
		}
	}
}

func TestDimFixedByFirstAnswer(t *testing.T) {
	dim := 3
	b := New(Options{}, func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = make([]float32, dim)
			out[i][0] = 1
		}
		return out, nil
	})
	if got := b.Dim(); got != 0 {
		t.Errorf("Dim() before any answer = %d, want 0", got)
	}
	if _, err := b.Embed(context.Background(), []string{"a"}, ""); err != nil {
		t.Fatal(err)
	}
	dim = 4
	if _, err := b.Embed(context.Background(), []string{"a"}, ""); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Embed() after the model changed dimension = %v, want ErrInvalid", err)
	}
	if got := b.Dim(); got != 3 {
		t.Errorf("Dim() = %d, want 3", got)
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		code      int
		msg       string
		wantKind  error
		wantRetry bool
		wantText  string
	}{
		{429, "slow down", habilis.ErrUnavailable, true, "server overloaded: HTTP 429 Too Many Requests: slow down"},
		{500, "boom", habilis.ErrUnavailable, true, "server error: HTTP 500 Internal Server Error: boom"},
		{503, "", habilis.ErrUnavailable, true, "server error: HTTP 503 Service Unavailable"},
		{400, "bad input", habilis.ErrInvalid, false, "server refused the request: HTTP 400 Bad Request: bad input"},
		{401, "bad key", habilis.ErrInvalid, false, "server refused the credentials: HTTP 401 Unauthorized: bad key"},
		{404, "no model", habilis.ErrInvalid, false, "server refused the request: HTTP 404 Not Found: no model"},
	}
	for _, tt := range tests {
		err := Status(tt.code, tt.msg, 0)
		if !errors.Is(err, tt.wantKind) || IsRetry(err) != tt.wantRetry || err.Error() != tt.wantText {
			t.Errorf("Status(%d, %q) = %q (retry %v), want %q (retry %v, %v)", tt.code, tt.msg, err, IsRetry(err), tt.wantText, tt.wantRetry, tt.wantKind)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{"-1", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.header != "" {
			h.Set("Retry-After", tt.header)
		}
		if got := RetryAfter(h, now); got != tt.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestMark(t *testing.T) {
	cause := errors.New("dial tcp: connection refused")
	err := Mark(fmt.Errorf("server unreachable: %w", cause), habilis.ErrUnavailable)
	if got, want := err.Error(), "server unreachable: dial tcp: connection refused"; got != want {
		t.Errorf("Mark().Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, habilis.ErrUnavailable) || !errors.Is(err, cause) {
		t.Errorf("Mark() = %v, want it to match both ErrUnavailable and its cause", err)
	}
}

func TestPrefix(t *testing.T) {
	for _, tt := range []struct {
		p    habilis.Purpose
		want string
	}{{habilis.Query, "search_query: "}, {habilis.Document, "search_document: "}} {
		if got, err := Prefix(tt.p, "search_query: ", "search_document: "); err != nil || got != tt.want {
			t.Errorf("Prefix(%d) = %q, %v, want %q", tt.p, got, err, tt.want)
		}
	}
	if _, err := Prefix(habilis.Purpose(9), "q", "d"); !errors.Is(err, habilis.ErrInvalid) {
		t.Errorf("Prefix(9) error = %v, want ErrInvalid", err)
	}
}
