package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"github.com/habilis-router/habilis/fill/executor"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// weatherServer is a tool's HTTP endpoint on loopback: it answers with the
// city it was sent and counts its calls.
type weatherServer struct {
	url   string
	calls atomic.Int32
}

func newWeatherServer(t *testing.T) *weatherServer {
	t.Helper()
	ws := &weatherServer{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws.calls.Add(1)
		var args map[string]any
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &args)
		json.NewEncoder(w).Encode(map[string]any{"city": args["city"], "sky": "sunny"})
	}))
	t.Cleanup(ts.Close)
	ws.url = ts.URL
	return ws
}

// invokeFixture serves testdata/invoke_tools.json, whose get_weather calls
// ws, with opts, and returns a client.
func invokeFixture(t *testing.T, ws *weatherServer, opts ServerOptions) *Client {
	t.Helper()
	tmpl, err := os.ReadFile("testdata/invoke_tools.json")
	if err != nil {
		t.Fatal(err)
	}
	data := strings.ReplaceAll(string(tmpl), "@URL@", ws.url+"/weather")
	tools, err := catalog.Parse("invoke_tools.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	_, addr := serve(t, newRouter(t, tools), opts)
	return dial(t, addr, DialOptions{})
}

func TestFill(t *testing.T) {
	c := invokeFixture(t, newWeatherServer(t), ServerOptions{})
	ctx := context.Background()

	q := "what's the weather in Paris"
	got, err := c.Fill(ctx, "get_weather", q)
	if err != nil {
		t.Fatalf("Fill(%q): %v", q, err)
	}
	if want := map[string]any{"city": "Paris"}; !cmp.Equal(got.Arguments, want) || got.FilledBy["city"] != "extractor" || !got.Complete {
		t.Errorf("Fill(%q) = %+v, want city Paris filled by the extractor, complete", q, got)
	}

	q = "send an email about the budget"
	got, err = c.Fill(ctx, "send_email", q)
	if err != nil {
		t.Fatalf("Fill(%q): %v", q, err)
	}
	if got.Complete || len(got.Missing) != 1 || got.Missing[0].Name != "to" || got.Missing[0].Question == "" {
		t.Errorf("Fill(%q) = %+v, want to missing with a question", q, got)
	}

	if _, err := c.Fill(ctx, "book_flight", q); !errors.Is(err, habilis.ErrNotFound) || status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "book_flight") {
		t.Errorf("Fill(book_flight) = %v, want NotFound naming the tool", err)
	}
}

func TestInvoke(t *testing.T) {
	ws := newWeatherServer(t)
	c := invokeFixture(t, ws, ServerOptions{Runner: executor.New(executor.Options{AllowedKinds: []string{executor.KindHTTP}})})
	ctx := context.Background()

	q := "what's the weather in Paris"
	got, err := c.Invoke(ctx, InvokeRequest{Tool: "get_weather", Query: q, Confirm: true})
	if err != nil {
		t.Fatalf("Invoke(%q): %v", q, err)
	}
	if !got.Ran || got.Result == nil || got.Result.IsError || !strings.Contains(got.Result.Text(), `"sky":"sunny"`) {
		t.Fatalf("Invoke(%q) = %+v result %+v, want a run answering sunny", q, got, got.Result)
	}
	if want := map[string]any{"city": "Paris", "sky": "sunny"}; !cmp.Equal(got.Result.StructuredContent, any(want)) {
		t.Errorf("Invoke(%q) structured content = %v, want %v", q, got.Result.StructuredContent, want)
	}
	if n := ws.calls.Load(); n != 1 {
		t.Errorf("Invoke(%q) called the tool %d times, want 1", q, n)
	}

	// Arguments sent are run with as they are, without a query.
	got, err = c.Invoke(ctx, InvokeRequest{Tool: "get_weather", Arguments: map[string]any{"city": "Oslo"}, Confirm: true})
	if err != nil {
		t.Fatalf("Invoke(city Oslo): %v", err)
	}
	if !got.Ran || !strings.Contains(got.Result.Text(), "Oslo") || got.Fill.FilledBy["city"] != "caller" {
		t.Errorf("Invoke(city Oslo) = %+v result %+v, want a run for Oslo", got, got.Result)
	}

	// A missing argument runs nothing and asks for it.
	before := ws.calls.Load()
	q = "what's the weather like"
	got, err = c.Invoke(ctx, InvokeRequest{Tool: "get_weather", Query: q, Confirm: true})
	if err != nil {
		t.Fatalf("Invoke(%q): %v", q, err)
	}
	if got.Ran || got.Result != nil || got.Fill.Complete || len(got.Fill.Missing) != 1 || got.Fill.Missing[0].Name != "city" || got.Fill.Missing[0].Question == "" {
		t.Errorf("Invoke(%q) = %+v, want nothing run and a question for city", q, got)
	}
	got, err = c.Invoke(ctx, InvokeRequest{Tool: "get_weather", Arguments: map[string]any{}, Confirm: true})
	if err != nil {
		t.Fatalf("Invoke(no arguments): %v", err)
	}
	if got.Ran || got.Result != nil || len(got.Fill.Missing) != 1 || got.Fill.Missing[0].Question == "" {
		t.Errorf("Invoke(no arguments) = %+v, want nothing run and a question for city", got)
	}
	if n := ws.calls.Load(); n != before {
		t.Errorf("Invoke with city missing called the tool %d times, want 0", n-before)
	}
}

// TestInvokeNotAllowed checks that a server whose runner allows no kind,
// or that has no runner, runs nothing and says why in an is_error result.
func TestInvokeNotAllowed(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts ServerOptions
		want string
	}{
		{"no kind allowed", ServerOptions{Runner: executor.New(executor.Options{})}, "not allowed"},
		{"no runner", ServerOptions{}, "this server runs no tools"},
	} {
		ws := newWeatherServer(t)
		c := invokeFixture(t, ws, tt.opts)
		q := "what's the weather in Paris"
		got, err := c.Invoke(context.Background(), InvokeRequest{Tool: "get_weather", Query: q, Confirm: true})
		if err != nil {
			t.Fatalf("%s: Invoke(%q): %v", tt.name, q, err)
		}
		if got.Ran || got.Result == nil || !got.Result.IsError || !strings.Contains(got.Result.Text(), tt.want) {
			t.Errorf("%s: Invoke(%q) = %+v result %+v, want an is_error result saying %q", tt.name, q, got, got.Result, tt.want)
		}
		if n := ws.calls.Load(); n != 0 {
			t.Errorf("%s: Invoke(%q) called the tool %d times, want 0", tt.name, q, n)
		}
	}
}

func TestInvokeErrors(t *testing.T) {
	ws := newWeatherServer(t)
	c := invokeFixture(t, ws, ServerOptions{Runner: executor.New(executor.Options{AllowedKinds: []string{executor.KindHTTP}})})
	ctx := context.Background()
	q := "what's the weather in Paris"

	_, err := c.Invoke(ctx, InvokeRequest{Tool: "get_weather", Query: q})
	var re *RemoteError
	if !errors.Is(err, habilis.ErrInvalid) || status.Code(err) != codes.InvalidArgument || !errors.As(err, &re) || re.FieldViolations()["confirm"] == "" {
		t.Errorf("Invoke(confirm false) = %v, want InvalidArgument naming confirm", err)
	}

	_, err = c.Invoke(ctx, InvokeRequest{Tool: "book_flight", Query: q, Confirm: true})
	if !errors.Is(err, habilis.ErrNotFound) || status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "book_flight") {
		t.Errorf("Invoke(book_flight) = %v, want NotFound naming the tool", err)
	}

	_, err = c.Invoke(ctx, InvokeRequest{Tool: "get_weather", Query: " ", Confirm: true})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("Invoke(blank query) = %v, want InvalidArgument", err)
	}
	if n := ws.calls.Load(); n != 0 {
		t.Errorf("refused Invoke calls reached the tool %d times, want 0", n)
	}
}
