package ollamatest

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ollama/ollama/api"

	"github.com/habilis-router/habilis/internal/vec"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestServerShared(t *testing.T) {
	a, b := Server(t), Server(t)
	if a != b {
		t.Errorf("Server() under Main = %p then %p, want one shared server", a, b)
	}
	v, err := a.Client.Version(context.Background())
	if err != nil || v == "" {
		t.Fatalf("Version() = %q, %v, want a version", v, err)
	}
}

func TestCreateEmbedModel(t *testing.T) {
	s := Server(t)
	ctx := context.Background()
	for _, dim := range []int{0, 24} {
		CreateEmbedModel(t, s.Client, "tiny-embed", dim)
		texts := []string{
			"what is the weather in paris today",
			"weather forecast for paris",
			"send an email to my boss",
			"Qu'est-ce que c'est? 日本 ünïcödé",
		}
		resp, err := s.Client.Embed(ctx, &api.EmbedRequest{Model: "tiny-embed", Input: texts})
		if err != nil {
			t.Fatalf("Embed(dim %d) error: %v", dim, err)
		}
		want := dim
		if want == 0 {
			want = DefaultEmbedDim
		}
		if len(resp.Embeddings) != len(texts) {
			t.Fatalf("Embed(dim %d) returned %d vectors, want %d", dim, len(resp.Embeddings), len(texts))
		}
		for i, v := range resp.Embeddings {
			if len(v) != want {
				t.Errorf("Embed(%q) has dimension %d, want %d", texts[i], len(v), want)
			}
			if n := vec.Dot(v, v); n < 0.99 || n > 1.01 {
				t.Errorf("Embed(%q) has squared norm %v, want 1", texts[i], n)
			}
		}
	}
}

func TestEmbedModelIsBagOfWords(t *testing.T) {
	s := Server(t)
	CreateEmbedModel(t, s.Client, "tiny-embed", 0)
	tests := []struct {
		a, b      string
		low, high float32
	}{
		{"what is the weather in paris today", "weather forecast for paris", 0.55, 0.8},
		{"weather in paris", "Weather in Paris?", 0.99, 1.01},
		{"weather in paris", "paris weather", 0.9, 1.01},
		{"what is the weather in paris today", "send an email to my boss", -0.25, 0.25},
		{"book a hotel in rome", "play some music", -0.25, 0.25},
	}
	for _, tt := range tests {
		resp, err := s.Client.Embed(context.Background(), &api.EmbedRequest{Model: "tiny-embed", Input: []string{tt.a, tt.b}})
		if err != nil {
			t.Fatal(err)
		}
		got := vec.Dot(resp.Embeddings[0], resp.Embeddings[1])
		if got < tt.low || got > tt.high {
			t.Errorf("similarity of %q and %q = %.3f, want in [%v, %v]", tt.a, tt.b, got, tt.low, tt.high)
		}
	}
}

func chat(t *testing.T, c *api.Client, model, prompt, schema string) string {
	t.Helper()
	stream := false
	var out strings.Builder
	err := c.Chat(context.Background(), &api.ChatRequest{
		Model:    model,
		Messages: []api.Message{{Role: "user", Content: prompt}},
		Format:   json.RawMessage(schema),
		Stream:   &stream,
		Options:  map[string]any{"num_predict": 128},
	}, func(r api.ChatResponse) error {
		out.WriteString(r.Message.Content)
		return nil
	})
	if err != nil {
		t.Fatalf("Chat(%q, %s) error: %v", prompt, schema, err)
	}
	return out.String()
}

func TestCreateChatModel(t *testing.T) {
	s := Server(t)
	CreateChatModel(t, s.Client, "tiny-chat", "")
	CreateChatModel(t, s.Client, "tiny-chat-rome", "Rome")
	tests := []struct {
		model  string
		schema string
		want   string
	}{
		{"tiny-chat", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`, `{"city":"Paris"}`},
		{"tiny-chat-rome", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`, `{"city":"Rome"}`},
		{
			"tiny-chat",
			`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"metric":{"type":"boolean"},"cities":{"type":"array","items":{"type":"string"}},"at":{"type":"object","properties":{"lat":{"type":"number"}},"required":["lat"]}},"required":["city","days","metric","cities","at"]}`,
			`{"city":"Paris","days":1,"metric":true,"cities":["Paris"],"at":{"lat":1}}`,
		},
		{"tiny-chat", `"json"`, `{"Paris":"Paris"}`},
	}
	for _, tt := range tests {
		got := chat(t, s.Client, tt.model, "what's the weather in paris?", tt.schema)
		var gotV, wantV any
		if err := json.Unmarshal([]byte(got), &gotV); err != nil {
			t.Errorf("%s with format %s wrote %q, not JSON: %v", tt.model, tt.schema, got, err)
			continue
		}
		json.Unmarshal([]byte(tt.want), &wantV)
		if diff := cmp.Diff(wantV, gotV); diff != "" {
			t.Errorf("%s with format %s wrote %s, want %s (-want +got):\n%s", tt.model, tt.schema, got, tt.want, diff)
		}
	}
}

func TestCheckWord(t *testing.T) {
	tests := []struct {
		word string
		ok   bool
	}{
		{"Paris", true},
		{"Oslo", true},
		{"Tokyo", false},
		{"London", false},
		{"Köln", false},
		{"New York", false},
	}
	for _, tt := range tests {
		if err := checkWord(tt.word); (err == nil) != tt.ok {
			t.Errorf("checkWord(%q) = %v, want ok %v", tt.word, err, tt.ok)
		}
	}
}

func TestSkipMessage(t *testing.T) {
	for _, want := range []string{"HABILIS_OLLAMA_BIN", "bash .ci/build-ollama.sh", "HABILIS_OLLAMA_HOST"} {
		if !strings.Contains(SkipMessage, want) {
			t.Errorf("SkipMessage = %q, want it to mention %q", SkipMessage, want)
		}
	}
}
