package ollamafill_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ollama/ollama/api"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/fill"
	"github.com/habilis-router/habilis/fill/executor"
	"github.com/habilis-router/habilis/fill/ollamafill"
	"github.com/habilis-router/habilis/internal/ollamatest"
)

func TestMain(m *testing.M) { os.Exit(ollamatest.Main(m)) }

const weatherSchema = `{"type":"object","properties":{"city":{"type":"string","description":"The city to get the weather for"}},"required":["city"]}`

// weatherService is a loopback HTTP tool that records what it was asked.
func weatherService(t *testing.T) (*httptest.Server, *[]map[string]any) {
	t.Helper()
	var calls []map[string]any
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args map[string]any
		json.NewDecoder(r.Body).Decode(&args)
		calls = append(calls, args)
		w.Write([]byte(`{"forecast":"sunny"}`))
	}))
	t.Cleanup(ts.Close)
	return ts, &calls
}

func TestFillAndRun(t *testing.T) {
	s := ollamatest.Server(t)
	ollamatest.CreateChatModel(t, s.Client, "tiny-paris", "Paris")
	ts, calls := weatherService(t)
	tool := habilis.Tool{
		Name: "get_weather", Description: "Current weather for a city",
		InputSchema: json.RawMessage(weatherSchema),
		Executor:    json.RawMessage(`{"kind":"http","url":"` + ts.URL + `"}`),
	}
	small := ollamafill.New(s.Client, "tiny-paris", ollamafill.Options{NumPredict: 64})
	tests := []struct {
		query string
		want  *fill.Result
		calls []map[string]any
	}{
		{"what's the weather in Paris", &fill.Result{
			Tool: "get_weather", Arguments: map[string]any{"city": "Paris"},
			FilledBy: map[string]string{"city": "ollama:tiny-paris"},
			Rejected: []fill.Rejection{}, Missing: []fill.MissingArg{}, Problems: []fill.Problem{}, Complete: true,
		}, []map[string]any{{"city": "Paris"}}},
		{"weather in Rome", &fill.Result{
			Tool: "get_weather", Arguments: map[string]any{}, FilledBy: map[string]string{},
			Rejected: []fill.Rejection{{Path: "city", Value: "Paris", Reason: "not found in the request", By: "ollama:tiny-paris"}},
			Missing: []fill.MissingArg{{Name: "city", Description: "The city to get the weather for",
				Question: "Which city do you want the weather for?"}},
			Problems: []fill.Problem{},
		}, []map[string]any{{"city": "Paris"}}},
	}
	for _, tt := range tests {
		got, err := fill.Fill(context.Background(), tool, tt.query, fill.Options{Fillers: []fill.Filler{small}})
		if err != nil {
			t.Fatalf("Fill(%q): %v", tt.query, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Fill(%q) mismatch (-want +got):\n%s", tt.query, diff)
		}
		r, err := executor.RunFilled(context.Background(), tool, got, executor.Options{AllowedKinds: []string{executor.KindHTTP}})
		if err != nil {
			t.Fatalf("RunFilled(%q): %v", tt.query, err)
		}
		if r.IsError == got.Complete {
			t.Errorf("RunFilled(%q) = %+v, want isError %v", tt.query, r, !got.Complete)
		}
		if diff := cmp.Diff(tt.calls, *calls); diff != "" {
			t.Errorf("after %q, tool calls mismatch (-want +got):\n%s", tt.query, diff)
		}
	}
}

func TestEscalation(t *testing.T) {
	s := ollamatest.Server(t)
	ollamatest.CreateChatModel(t, s.Client, "tiny-paris", "Paris")
	ollamatest.CreateChatModel(t, s.Client, "tiny-rome", "Rome")
	tool := habilis.Tool{Name: "get_weather", Description: "Current weather for a city", InputSchema: json.RawMessage(weatherSchema)}
	e := fill.Escalating{
		Small: ollamafill.New(s.Client, "tiny-paris", ollamafill.Options{NumPredict: 64}),
		Large: ollamafill.New(s.Client, "tiny-rome", ollamafill.Options{NumPredict: 64}),
	}
	tests := []struct {
		query    string
		args     map[string]any
		filledBy map[string]string
		rejected int
	}{
		{"weather in Paris", map[string]any{"city": "Paris"}, map[string]string{"city": "ollama:tiny-paris"}, 0},
		{"weather in Rome", map[string]any{"city": "Rome"}, map[string]string{"city": "ollama:tiny-rome"}, 1},
		{"weather in Oslo", map[string]any{}, map[string]string{}, 2},
	}
	for _, tt := range tests {
		got, err := fill.Fill(context.Background(), tool, tt.query, fill.Options{Fillers: []fill.Filler{e}})
		if err != nil {
			t.Fatalf("Fill(%q): %v", tt.query, err)
		}
		if !cmp.Equal(got.Arguments, tt.args) || !cmp.Equal(got.FilledBy, tt.filledBy) || len(got.Rejected) != tt.rejected {
			t.Errorf("Fill(%q) = args %v by %v rejected %v, want args %v by %v and %d rejections",
				tt.query, got.Arguments, got.FilledBy, got.Rejected, tt.args, tt.filledBy, tt.rejected)
		}
	}
}

func TestFillerFormat(t *testing.T) {
	s := ollamatest.Server(t)
	ollamatest.CreateChatModel(t, s.Client, "tiny-paris", "Paris")
	f := ollamafill.New(s.Client, "tiny-paris", ollamafill.Options{})
	if f.Name() != "ollama:tiny-paris" {
		t.Errorf("Name() = %q, want ollama:tiny-paris", f.Name())
	}
	// The answer follows the schema: the string goes to the only string
	// argument, and the model's "1" to the integer one.
	tool := habilis.Tool{Name: "t", Description: "d", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"unit":{"type":"string","enum":["Paris","Rome"]}}}`)}
	got, err := f.Fill(context.Background(), tool, "weather in Paris")
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range got {
		switch name {
		case "city", "unit":
			if v != "Paris" {
				t.Errorf("Fill() %s = %v, want Paris", name, v)
			}
		case "days":
			if v != 1.0 {
				t.Errorf("Fill() days = %v, want 1", v)
			}
		default:
			t.Errorf("Fill() = %v: unknown argument %q", got, name)
		}
	}
	if len(got) == 0 {
		t.Errorf("Fill() = %v, want at least one argument", got)
	}
}

func TestFillerUnknownModel(t *testing.T) {
	s := ollamatest.Server(t)
	f := ollamafill.New(s.Client, "no-such-model", ollamafill.Options{})
	_, err := f.Fill(context.Background(), habilis.Tool{Name: "t", InputSchema: json.RawMessage(weatherSchema)}, "weather in Paris")
	if !errors.Is(err, habilis.ErrNotFound) {
		t.Errorf("Fill(unknown model) error = %v, want ErrNotFound", err)
	}
}

func TestFillerUnreachable(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(ts.URL)
	ts.Close()
	f := ollamafill.New(api.NewClient(u, http.DefaultClient), "m", ollamafill.Options{})
	_, err := f.Fill(context.Background(), habilis.Tool{Name: "t", InputSchema: json.RawMessage(weatherSchema)}, "weather in Paris")
	if !errors.Is(err, habilis.ErrUnavailable) {
		t.Errorf("Fill(unreachable server) error = %v, want ErrUnavailable", err)
	}
}

// TestFillerGarbage serves answers a broken model or proxy could give:
// every one must be an error, never a panic or invented arguments.
func TestFillerGarbage(t *testing.T) {
	answers := []string{``, `not json`, `[1,2]`, `"Paris"`, `{"city":`, `null`, "```json\n{\"city\":\"Paris\"}\n```"}
	for _, a := range answers {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req api.ChatRequest
			json.NewDecoder(r.Body).Decode(&req)
			json.NewEncoder(w).Encode(api.ChatResponse{Model: req.Model, Message: api.Message{Role: "assistant", Content: a}, Done: true})
		}))
		u, _ := url.Parse(ts.URL)
		f := ollamafill.New(api.NewClient(u, http.DefaultClient), "m", ollamafill.Options{})
		got, err := f.Fill(context.Background(), habilis.Tool{Name: "t", InputSchema: json.RawMessage(weatherSchema)}, "weather in Paris")
		ts.Close()
		if strings.HasPrefix(a, "```") {
			if err != nil || got["city"] != "Paris" {
				t.Errorf("Fill(answer %q) = %v, %v, want city Paris", a, got, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("Fill(answer %q) = %v, want an error", a, got)
		}
	}
}

// TestRequest checks what the filler sends: the schema as format without
// "required", temperature 0, the token cap, no streaming, and the user's
// words alone as the user message.
func TestRequest(t *testing.T) {
	var req api.ChatRequest
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&req)
		json.NewEncoder(w).Encode(api.ChatResponse{Message: api.Message{Role: "assistant", Content: `{}`}, Done: true})
	}))
	defer ts.Close()
	u, _ := url.Parse(ts.URL)
	f := ollamafill.New(api.NewClient(u, http.DefaultClient), "m", ollamafill.Options{NumPredict: 100})
	if _, err := f.Fill(context.Background(), habilis.Tool{Name: "get_weather", Description: "Weather", InputSchema: json.RawMessage(weatherSchema)}, "weather in Paris"); err != nil {
		t.Fatal(err)
	}
	if got, want := string(req.Format), `{"additionalProperties":false,"properties":{"city":{"type":"string"}},"type":"object"}`; got != want {
		t.Errorf("format = %s, want %s", got, want)
	}
	if req.Stream == nil || *req.Stream {
		t.Errorf("stream = %v, want false", req.Stream)
	}
	if req.Options["temperature"] != 0.0 || req.Options["num_predict"] != 100.0 {
		t.Errorf("options = %v, want temperature 0 and num_predict 100", req.Options)
	}
	if len(req.Messages) != 2 || req.Messages[1].Role != "user" || req.Messages[1].Content != "weather in Paris" {
		t.Errorf("messages = %+v, want the user's words alone as the user message", req.Messages)
	}
	if sys := req.Messages[0].Content; !strings.Contains(sys, "city (string, required): The city to get the weather for") || !strings.Contains(sys, "Leave out") {
		t.Errorf("system prompt = %q, want the arguments and the extractive rules", sys)
	}
}
