package ollamatest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/fs/ggml"
)

// DefaultEmbedDim is the dimension of an embedding model created with dim 0.
const DefaultEmbedDim = 256

// DefaultWord is the word a chat model created with word "" writes.
const DefaultWord = "Paris"

// embedWords are the whole words of the embedding model's vocabulary. Any
// other lowercase word is spelt with letter and digit pieces, and any other
// character is one unknown token, so every text embeds.
const embedWords = `
	add after again ask available best between book booking buy calendar call
	cancel change chat check city close code cold compare contact convert cost
	create currency data date day days delete directions document done download
	email event events every file files find flight flights forecast get give go
	going good hello help hot hotel information know language last latest list
	local look make meeting meetings message messages more most movie movies
	much music near need new news next note notes now number off one open order
	other people phone picture play price put rain rate read recipe remind
	reminder remove restaurant restaurants right route run save schedule search
	see send set shopping show song songs start stock stocks stop summarize
	sunny table take tell temperature text time timer today tomorrow translate
	travel trip turn two update upload use user want weather week word words work
	write year paris london rome berlin tokyo york madrid
`

// embedStopwords are whole words that carry little meaning: they weigh a
// sixth of other words, so texts are alike for what they are about.
const embedStopwords = `
	a about all also am an and any are as at be because been before being both
	but by can could did do does doing each for from has have her here him his
	how i if in into is it its just me my no not of on or our out over please
	should so some than that the their them then there these they this to too
	up us was what when where which who why will with would you your
`

// TinyEmbedModel is the name under which EmbedServer registers the tiny
// embedding model of dimension DefaultEmbedDim.
const TinyEmbedModel = "habilis-tiny-embed"

// EmbedServer returns Server with TinyEmbedModel registered, or skips tb
// as Server does.
func EmbedServer(tb testing.TB) *Instance {
	tb.Helper()
	s := Server(tb)
	CreateEmbedModel(tb, s.Client, TinyEmbedModel, 0)
	return s
}

// CreateEmbedModel writes a tiny BERT embedding model of dimension dim (0
// means DefaultEmbedDim) and registers it on the server as name.
//
// Its vectors are a normalised bag of words: each vocabulary token has a
// fixed random vector and the layer passes its input through, so texts that
// share words score high (a paraphrase about 0.7) and unrelated texts near 0.
// The vocabulary holds common English words, letters and digits; a word
// outside it is spelt with letter pieces, and any other character is one
// unknown token with a vector of its own. The same dim always gives the same
// model.
func CreateEmbedModel(tb testing.TB, c *api.Client, name string, dim int) {
	tb.Helper()
	if dim == 0 {
		dim = DefaultEmbedDim
	}
	path := filepath.Join(tb.TempDir(), "embed.gguf")
	if err := writeEmbedModel(path, dim); err != nil {
		tb.Fatalf("write embedding model: %v", err)
	}
	// One thread: the model is too small to gain from more, and on a busy
	// machine the threads' barriers make each request many times slower.
	create(tb, c, name, path, &api.CreateRequest{Parameters: map[string]any{"num_thread": 1}})
}

// CreateChatModel writes a tiny byte-level chat model and registers it on
// the server as name. It is for tests that ask for JSON with a format (a
// JSON Schema, or "json") and a num_predict cap: Ollama's grammar keeps the
// output valid JSON, and the model's table of which byte follows which fills
// it with fixed values:
//
//   - every string is word (DefaultWord when word is ""), keys included;
//   - every number is 1 and every boolean true;
//   - containers close as soon as the grammar lets them (an array holds one
//     item, an object only its required keys, or one key when it has none).
//
// So {"type":"object","properties":{"city":{"type":"string"}},"required":
// ["city"]} gives {"city":"Paris"}. A test chooses the word for what the
// model should "answer", and creates one model per word it needs. The table
// only knows which byte follows which, so word must be ASCII letters with no
// letter repeated, case counting: "Paris", "Rome", "Berlin" and "Oslo" are
// fine, "London" and "Tokyo" are not. The model samples with temperature 0
// and stops after 128 tokens unless a request overrides them; without a
// format its output is not meaningful. Both tiny models run on one thread.
func CreateChatModel(tb testing.TB, c *api.Client, name, word string) {
	tb.Helper()
	createChat(tb, c, name, word, "{{- range .Messages }}{{ .Content }}\n{{ end }}")
}

// CreateToolChatModel is CreateChatModel for requests with tools: Ollama
// takes tools only for a model whose template uses them. The template
// writes each tool's name on a line of its own before the messages, so
// with the byte-level vocabulary a request's prompt_tokens is
// ToolPromptTokens of its tools and messages: a test can tell from the
// usage the server reports which tools reached the model.
func CreateToolChatModel(tb testing.TB, c *api.Client, name, word string) {
	tb.Helper()
	createChat(tb, c, name, word, "{{- range .Tools }}{{ .Function.Name }}\n{{ end }}{{- range .Messages }}{{ .Content }}\n{{ end }}")
}

// ToolPromptTokens is the prompt_tokens of a request to a model of
// CreateToolChatModel with tools of these names and messages of these
// contents: one token a byte, and a newline after each.
func ToolPromptTokens(tools, contents []string) int {
	n := 0
	for _, s := range append(slices.Clip(tools), contents...) {
		n += len(s) + 1
	}
	return n
}

func createChat(tb testing.TB, c *api.Client, name, word, template string) {
	tb.Helper()
	if word == "" {
		word = DefaultWord
	}
	if err := checkWord(word); err != nil {
		tb.Fatalf("CreateChatModel(%q): %v", word, err)
	}
	path := filepath.Join(tb.TempDir(), "chat.gguf")
	if err := writeChatModel(path, word); err != nil {
		tb.Fatalf("write chat model: %v", err)
	}
	create(tb, c, name, path, &api.CreateRequest{
		Template: template,
		Parameters: map[string]any{
			"temperature": 0,
			"num_predict": 128,
			"num_thread":  1,
		},
	})
}

func checkWord(word string) error {
	seen := map[rune]bool{}
	for _, r := range word {
		if r > unicode.MaxASCII || !unicode.IsLetter(r) {
			return fmt.Errorf("word has %q: want ASCII letters only", r)
		}
		if seen[r] {
			return fmt.Errorf("word repeats %q: a byte table cannot spell it", r)
		}
		seen[r] = true
	}
	return nil
}

// create uploads the GGUF file at path and creates model name from it, with
// the template and parameters of req when req is not nil.
func create(tb testing.TB, c *api.Client, name, path string, req *api.CreateRequest) {
	tb.Helper()
	ctx := context.Background()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		tb.Fatal(err)
	}
	digest := fmt.Sprintf("sha256:%x", h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		tb.Fatal(err)
	}
	if err := c.CreateBlob(ctx, digest, f); err != nil {
		tb.Fatalf("create blob for %s: %v", name, err)
	}
	if req == nil {
		req = &api.CreateRequest{}
	}
	req.Model = name
	req.Files = map[string]string{"model.gguf": digest}
	if err := c.Create(ctx, req, func(api.ProgressResponse) error { return nil }); err != nil {
		tb.Fatalf("create model %s: %v", name, err)
	}
}

// tensor is one float32 tensor; shape is in GGUF order (innermost first).
func tensor(name string, data []float32, shape ...uint64) *ggml.Tensor {
	return &ggml.Tensor{Name: name, Kind: uint32(ggml.TensorTypeF32), Shape: shape, WriterTo: f32s(data)}
}

type f32s []float32

func (s f32s) WriteTo(w io.Writer) (int64, error) {
	b := make([]byte, 4*len(s))
	for i, v := range s {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	n, err := w.Write(b)
	return int64(n), err
}

func filled(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func writeGGUF(path string, kv ggml.KV, ts []*ggml.Tensor) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// embedVocab returns the WordPiece vocabulary and each token's weight:
// specials, whole words, single characters at the start of a word (marked
// "▁"), and letters and digits inside a word. Words spelt with pieces and
// punctuation weigh little, like stopwords.
func embedVocab() ([]string, []float64) {
	const word, stop, piece, unknown = 30, 0.1, 0.1, 1
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]"}
	weights := []float64{0, unknown, 0, 0}
	seen := map[string]bool{}
	add := func(s string, w float64) {
		if !seen[s] {
			seen[s] = true
			vocab = append(vocab, s)
			weights = append(weights, w)
		}
	}
	for _, w := range strings.Fields(embedWords) {
		add("▁"+w, word)
	}
	for _, w := range strings.Fields(embedStopwords) {
		add("▁"+w, stop)
	}
	for r := rune('!'); r <= '~'; r++ {
		if !unicode.IsUpper(r) {
			add("▁"+string(r), piece)
		}
	}
	for r := rune('0'); r <= 'z'; r++ {
		if unicode.IsDigit(r) || unicode.IsLower(r) {
			add(string(r), piece)
		}
	}
	return vocab, weights
}

func writeEmbedModel(path string, dim int) error {
	const (
		ctxLen = 512
		ffn    = 16
	)
	vocab, weights := embedVocab()
	types := make([]int32, len(vocab))
	for i := range types {
		types[i] = 1 // normal
	}
	types[0], types[2], types[3] = 3, 3, 3 // control
	types[1] = 2                           // unknown

	// Token vectors are random with a scale per token. The model's layer
	// norms use epsilon 1, so they keep a token's scale instead of making
	// every token the same length: words weigh more than stopwords and
	// pieces. [PAD], [CLS] and [SEP] are zero so the specials added to every
	// text do not make unrelated texts alike.
	rng := rand.New(rand.NewPCG(1, uint64(dim)))
	embd := make([]float32, dim*len(vocab))
	for t, w := range weights {
		for i := range dim {
			embd[t*dim+i] = float32(w * rng.NormFloat64())
		}
	}

	h, n := uint64(dim), uint64(len(vocab))
	kv := ggml.KV{
		"general.architecture":              "bert",
		"general.name":                      "habilis-tiny-embed",
		"general.file_type":                 uint32(0),
		"bert.block_count":                  uint32(1),
		"bert.context_length":               uint32(ctxLen),
		"bert.embedding_length":             uint32(dim),
		"bert.feed_forward_length":          uint32(ffn),
		"bert.attention.head_count":         uint32(1),
		"bert.attention.layer_norm_epsilon": float32(1),
		"bert.pooling_type":                 uint32(1), // mean
		"tokenizer.ggml.model":              "bert",
		"tokenizer.ggml.tokens":             vocab,
		"tokenizer.ggml.token_type":         types,
		"tokenizer.ggml.scores":             make([]float32, len(vocab)),
		"tokenizer.ggml.padding_token_id":   uint32(0),
		"tokenizer.ggml.unknown_token_id":   uint32(1),
		"tokenizer.ggml.cls_token_id":       uint32(2),
		"tokenizer.ggml.seperator_token_id": uint32(3),
	}
	// The attention output and the FFN down-projection are zero, so the
	// layer passes its (layer-normalised) input through and the pooled
	// vector is the mean of the token vectors.
	ts := []*ggml.Tensor{
		tensor("token_embd.weight", embd, h, n),
		tensor("token_types.weight", make([]float32, 2*dim), h, 2),
		tensor("position_embd.weight", make([]float32, ctxLen*dim), h, ctxLen),
		tensor("token_embd_norm.weight", filled(dim, 1), h),
		tensor("token_embd_norm.bias", make([]float32, dim), h),
		tensor("blk.0.attn_q.weight", make([]float32, dim*dim), h, h),
		tensor("blk.0.attn_k.weight", make([]float32, dim*dim), h, h),
		tensor("blk.0.attn_v.weight", make([]float32, dim*dim), h, h),
		tensor("blk.0.attn_output.weight", make([]float32, dim*dim), h, h),
		tensor("blk.0.attn_output_norm.weight", filled(dim, 1), h),
		tensor("blk.0.attn_output_norm.bias", make([]float32, dim), h),
		tensor("blk.0.ffn_up.weight", make([]float32, dim*ffn), h, ffn),
		tensor("blk.0.ffn_down.weight", make([]float32, ffn*dim), ffn, h),
		tensor("blk.0.layer_output_norm.weight", filled(dim, 1), h),
		tensor("blk.0.layer_output_norm.bias", make([]float32, dim), h),
	}
	return writeGGUF(path, kv, ts)
}

// Chat model layout: tokens 0-255 are the bytes, then BOS and EOS.
const (
	chatBOS   = 256
	chatEOS   = 257
	chatVocab = 258
	chatDim   = 256 // one dimension per byte
	chatFFN   = 64
	chatHeads = 4
)

// byteTokens returns GPT-2's byte-level token strings: printable bytes stand
// for themselves and the rest for code points from 256 up.
func byteTokens() []string {
	toks := make([]string, 256)
	next := rune(256)
	for b := range 256 {
		r := rune(b)
		if !(r >= '!' && r <= '~' || r >= 0xA1 && r <= 0xAC || r >= 0xAE && r <= 0xFF) {
			r = next
			next++
		}
		toks[b] = string(r)
	}
	return toks
}

// chatTable returns, for each byte, the tokens it prefers to be followed by,
// best first. The grammar of a format masks the tokens it does not allow, so
// the first allowed one is written; whitespace is never preferred.
func chatTable(word string) map[int][]int {
	// closing comes first so containers end and the model stops when the
	// grammar allows; ',' before the value starts so a finished number
	// moves on rather than growing digits.
	closing := []int{'}', ']', chatEOS, ',', ':', '"', '1', 't', '[', '{', 'n', 'f', '-', '0'}
	valueStart := []int{'"', '1', 't', '{', ']', '[', 'n', 'f', '-', '0'}
	prefs := map[int][]int{
		'{': append([]int{'"'}, closing...),
		',': append([]int{'"'}, valueStart...),
		':': valueStart,
		'[': valueStart,
		'"': append([]int{int(word[0])}, closing...),
	}
	for i := range len(word) {
		next := int('"')
		if i+1 < len(word) {
			next = int(word[i+1])
		}
		prefs[int(word[i])] = append([]int{next}, closing...)
	}
	for b := range 256 {
		if _, ok := prefs[b]; !ok {
			prefs[b] = closing
		}
	}
	return prefs
}

func writeChatModel(path, word string) error {
	toks := append(byteTokens(), "<s>", "</s>")
	types := make([]int32, chatVocab)
	for i := range types {
		types[i] = 1 // normal
	}
	types[chatBOS], types[chatEOS] = 3, 3 // control

	// Token b's embedding is the unit vector e_b (BOS and EOS are zero).
	embd := make([]float32, chatDim*chatVocab)
	for b := range 256 {
		embd[b*chatDim+b] = 1
	}
	// With attention and FFN outputs zero, the final state for input byte
	// b is RMSNorm(e_b) = 16·e_b; the output norm's 1/16 makes it e_b, so
	// logit[v] = out[v][b], the table entry. Scores fall by 0.85 per rank:
	// the repeat penalty (÷1.1) cannot swap neighbours, and the gaps stay
	// wide enough that even temperature sampling keeps the order.
	out := make([]float32, chatDim*chatVocab)
	for b, pref := range chatTable(word) {
		score := float32(1000)
		for _, v := range pref {
			if out[v*chatDim+b] == 0 {
				out[v*chatDim+b] = score
				score *= 0.85
			}
		}
	}

	h, n := uint64(chatDim), uint64(chatVocab)
	kv := ggml.KV{
		"general.architecture":                   "llama",
		"general.name":                           "habilis-tiny-chat",
		"general.file_type":                      uint32(0),
		"llama.block_count":                      uint32(1),
		"llama.context_length":                   uint32(4096),
		"llama.embedding_length":                 uint32(chatDim),
		"llama.feed_forward_length":              uint32(chatFFN),
		"llama.attention.head_count":             uint32(chatHeads),
		"llama.attention.head_count_kv":          uint32(chatHeads),
		"llama.attention.layer_norm_rms_epsilon": float32(1e-6),
		"llama.rope.dimension_count":             uint32(chatDim / chatHeads),
		"llama.rope.freq_base":                   float32(10000),
		"llama.vocab_size":                       uint32(chatVocab),
		"tokenizer.ggml.model":                   "gpt2",
		"tokenizer.ggml.pre":                     "default",
		"tokenizer.ggml.tokens":                  toks,
		"tokenizer.ggml.token_type":              types,
		"tokenizer.ggml.merges":                  []string{},
		"tokenizer.ggml.bos_token_id":            uint32(chatBOS),
		"tokenizer.ggml.eos_token_id":            uint32(chatEOS),
		"tokenizer.ggml.add_bos_token":           false,
		"tokenizer.ggml.add_eos_token":           false,
	}
	ts := []*ggml.Tensor{
		tensor("token_embd.weight", embd, h, n),
		tensor("output_norm.weight", filled(chatDim, 1.0/16), h),
		tensor("output.weight", out, h, n),
		tensor("blk.0.attn_norm.weight", filled(chatDim, 1), h),
		tensor("blk.0.attn_q.weight", make([]float32, chatDim*chatDim), h, h),
		tensor("blk.0.attn_k.weight", make([]float32, chatDim*chatDim), h, h),
		tensor("blk.0.attn_v.weight", make([]float32, chatDim*chatDim), h, h),
		tensor("blk.0.attn_output.weight", make([]float32, chatDim*chatDim), h, h),
		tensor("blk.0.ffn_norm.weight", filled(chatDim, 1), h),
		tensor("blk.0.ffn_gate.weight", make([]float32, chatDim*chatFFN), h, chatFFN),
		tensor("blk.0.ffn_up.weight", make([]float32, chatDim*chatFFN), h, chatFFN),
		tensor("blk.0.ffn_down.weight", make([]float32, chatFFN*chatDim), chatFFN, h),
	}
	return writeGGUF(path, kv, ts)
}
