package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/habilis-router/habilis/embed/lexical"
	"github.com/habilis-router/habilis/internal/ollamatest"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestMain shares one Ollama server among the tests that need one.
func TestMain(m *testing.M) { os.Exit(ollamatest.Main(m)) }

// ollamaProxy is a real Ollama with a tiny chat model that takes tools,
// behind a proxy with the default k, and OpenAI clients of both.
type ollamaProxy struct {
	model          string
	host, proxy    string
	viaProxy, dirc openai.Client
	tools          []openai.ChatCompletionToolUnionParam
}

func newOllamaProxy(t *testing.T) *ollamaProxy {
	t.Helper()
	inst := ollamatest.Server(t)
	o := &ollamaProxy{model: "habilis-proxy-tools", host: inst.Host}
	ollamatest.CreateToolChatModel(t, inst.Client, o.model, "")
	s := NewServer(newRouter(t, testTools(t)), ServerOptions{InlineEmbedder: lexical.New(lexical.Options{})})
	p, err := NewProxy(s, ProxyOptions{Upstream: inst.Host + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	o.proxy = serveHTTP(t, p)
	// Changing the base URL is all it takes to put habilis in front.
	o.viaProxy = openai.NewClient(option.WithBaseURL(o.proxy+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	o.dirc = openai.NewClient(option.WithBaseURL(inst.Host+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	if err := json.Unmarshal(openAITools(t), &o.tools); err != nil {
		t.Fatal(err)
	}
	return o
}

// params is a request with the 50 tools; the model writes a few tokens.
func (o *ollamaProxy) params(msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: o.model, Messages: msgs, Tools: o.tools, MaxTokens: openai.Int(8)}
}

// only is o.tools cut to the named ones.
func (o *ollamaProxy) only(names []string) []openai.ChatCompletionToolUnionParam {
	var out []openai.ChatCompletionToolUnionParam
	for _, t := range o.tools {
		if slices.Contains(names, t.OfFunction.Function.Name) {
			out = append(out, t)
		}
	}
	return out
}

// habilisHeaders reads the proxy's headers: the forwarded tools' names,
// checked against the counts.
func habilisHeaders(t *testing.T, resp *http.Response, before int) []string {
	t.Helper()
	if resp == nil {
		t.Fatal("no HTTP response recorded")
	}
	selected := strings.Split(resp.Header.Get(HeaderSelected), ",")
	if got := resp.Header.Get(HeaderToolsBefore); got != strconv.Itoa(before) {
		t.Errorf("%s = %q, want %d", HeaderToolsBefore, got, before)
	}
	if got := resp.Header.Get(HeaderToolsAfter); got != strconv.Itoa(len(selected)) {
		t.Errorf("%s = %q, want %d, the names of %s %q", HeaderToolsAfter, got, len(selected), HeaderSelected, selected)
	}
	return selected
}

const ollamaAsk = "send an email to Bob with the report"

// TestProxyOllama puts the proxy in front of a real Ollama: a request with
// 50 tools reaches the model with the 5 chosen, as the prompt's length
// shows, and the answer is the one the model gives to those 5 tools sent
// directly.
func TestProxyOllama(t *testing.T) {
	o := newOllamaProxy(t)
	ctx := context.Background()
	params := o.params(openai.UserMessage(ollamaAsk))
	var resp *http.Response
	got, err := o.viaProxy.Chat.Completions.New(ctx, params, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatalf("chat through the proxy: %v", err)
	}
	selected := habilisHeaders(t, resp, 50)
	if len(selected) != 5 || !slices.Contains(selected, "send_email") {
		t.Errorf("%s = %q, want 5 tools with send_email", HeaderSelected, selected)
	}
	if want := int64(ollamatest.ToolPromptTokens(selected, []string{ollamaAsk})); got.Usage.PromptTokens != want {
		t.Errorf("prompt_tokens through the proxy = %d, want %d: the model's prompt with the %d selected tools", got.Usage.PromptTokens, want, len(selected))
	}
	all, err := o.dirc.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if all.Usage.PromptTokens <= got.Usage.PromptTokens {
		t.Errorf("prompt_tokens with all 50 tools = %d, not above the proxied %d", all.Usage.PromptTokens, got.Usage.PromptTokens)
	}
	want := o.direct(t, params, selected)
	t.Logf("forwarded %q: prompt_tokens %d (all 50 tools: %d), answer %q", selected, got.Usage.PromptTokens, all.Usage.PromptTokens, want.Choices[0].Message.Content)
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != want.Choices[0].Message.Content ||
		got.Choices[0].FinishReason != want.Choices[0].FinishReason || got.Object != want.Object || got.Model != want.Model {
		t.Errorf("answer through the proxy %+v, want the model's answer to the selected tools sent directly %+v", got.Choices, want.Choices)
	}
}

// direct is the model's answer to params with only the named tools, asked
// without the proxy.
func (o *ollamaProxy) direct(t *testing.T, params openai.ChatCompletionNewParams, names []string) *openai.ChatCompletion {
	t.Helper()
	params.Tools = o.only(names)
	want, err := o.dirc.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// TestProxyOllamaStream is TestProxyOllama streamed: the same tools reach
// the model, and the answer comes back in chunks, usage in the last.
func TestProxyOllamaStream(t *testing.T) {
	o := newOllamaProxy(t)
	params := o.params(openai.UserMessage(ollamaAsk))
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	var resp *http.Response
	stream := o.viaProxy.Chat.Completions.NewStreaming(context.Background(), params, option.WithResponseInto(&resp))
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream through the proxy: %v", err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("stream Content-Type = %q, want text/event-stream", ct)
	}
	selected := habilisHeaders(t, resp, 50)
	if len(selected) != 5 || !slices.Contains(selected, "send_email") {
		t.Errorf("%s = %q, want 5 tools with send_email", HeaderSelected, selected)
	}
	want := o.direct(t, o.params(openai.UserMessage(ollamaAsk)), selected)
	if chunks < 2 || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != want.Choices[0].Message.Content {
		t.Errorf("stream of %d chunks gave %+v, want the answer %q", chunks, acc.Choices, want.Choices[0].Message.Content)
	}
	if acc.Usage.PromptTokens != want.Usage.PromptTokens {
		t.Errorf("stream prompt_tokens = %d, want %d as with the selected tools sent directly", acc.Usage.PromptTokens, want.Usage.PromptTokens)
	}
}

// TestProxyOllamaKeepsConversation checks that a tool the tool_choice
// names and tools called earlier reach the model with the k chosen.
func TestProxyOllamaKeepsConversation(t *testing.T) {
	o := newOllamaProxy(t)
	call := openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID:       "call_1",
		Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city":"Paris"}`},
	}}
	params := o.params(
		openai.UserMessage("what's the weather in Paris"),
		openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{call}}},
		openai.ToolMessage("sunny", "call_1"),
		openai.UserMessage("send an email to Bob with the report"),
	)
	params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
		Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "lock_door"},
	}}
	var resp *http.Response
	got, err := o.viaProxy.Chat.Completions.New(context.Background(), params, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatalf("chat through the proxy: %v", err)
	}
	selected := habilisHeaders(t, resp, 50)
	for _, name := range []string{"send_email", "get_weather", "lock_door"} {
		if !slices.Contains(selected, name) {
			t.Errorf("%s = %q, want %s among them", HeaderSelected, selected, name)
		}
	}
	t.Logf("forwarded %q", selected)
	if len(selected) < 5 || len(selected) > 7 {
		t.Errorf("%d tools forwarded, want the 5 best and the 2 the conversation needs", len(selected))
	}
	want := o.direct(t, params, selected)
	if got.Usage.PromptTokens != want.Usage.PromptTokens {
		t.Errorf("prompt_tokens through the proxy = %d, want %d as with the %d forwarded tools sent directly", got.Usage.PromptTokens, want.Usage.PromptTokens, len(selected))
	}
}

// TestProxyOllamaError checks that an error of the upstream comes back as
// it sent it.
func TestProxyOllamaError(t *testing.T) {
	o := newOllamaProxy(t)
	body := chatBody(openAITools(t), userMail, "")
	body = strings.Replace(body, `"model": "tiny"`, `"model": "no-such-model"`, 1)
	directStatus, directHdr, direct := testutil.Post(t, o.host+"/v1/chat/completions", body)
	status, hdr, got := testutil.Post(t, o.proxy+"/v1/chat/completions", body)
	t.Logf("upstream error: %d %s", directStatus, direct)
	if directStatus < 400 || status != directStatus || got != direct || hdr.Get("Content-Type") != directHdr.Get("Content-Type") {
		t.Errorf("through the proxy: %d %s %q; directly: %d %s %q", status, hdr.Get("Content-Type"), got, directStatus, directHdr.Get("Content-Type"), direct)
	}
	_, err := o.viaProxy.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "no-such-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, Tools: o.tools,
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != directStatus {
		t.Errorf("OpenAI client through the proxy: %v, want the upstream's %d as an *openai.Error", err, directStatus)
	}
}
