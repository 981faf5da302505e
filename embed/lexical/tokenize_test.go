package lexical

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"  ,;!? ", nil},
		{"Hello world", []string{"hello", "world"}},
		{"getWeatherForecast", []string{"get", "weather", "forecast", "getweatherforecast"}},
		{"HTTPServer", []string{"http", "server", "httpserver"}},
		{"ABCmouse", []string{"ab", "cmous", "abcmous"}},
		{"mp3Player", []string{"mp3", "player", "mp3player"}},
		{"iPhone15Pro", []string{"i", "phone15", "pro", "iphone15pro"}},
		{"zZzZ", []string{"z", "zz", "z", "zzzz"}},
		{"get_stock_price", []string{"get", "stock", "pric", "getstockpric"}},
		{"send-email", []string{"send", "email", "sendemail"}},
		{"weather.current", []string{"weather", "current", "weathercurrent"}},
		{"What's the time?", []string{"what", "the", "tim"}},
		{"I’m here", []string{"im", "her"}},
		{"'quoted'", []string{"quot"}},
		{"costs 3.5 or 1,000 dollars in 2024", []string{"cost", "3.5", "or", "1000", "dollar", "in", "2024"}},
		{"end of sentence. Next", []string{"end", "of", "sentenc", "next"}},
		{"Ünïcödé ÇAFÉ straße", []string{"ünïcödé", "çafé", "straße"}},
		{"東京の天気", []string{"東京の天気"}},
		{"booking flights running quickly", []string{"book", "flight", "run", "quickli"}},
		{"studies studied study", []string{"studi", "studi", "studi"}},
		{"makes making make", []string{"mak", "mak", "mak"}},
		{"boxes matches classes", []string{"box", "match", "class"}},
		{"bus status analysis", []string{"bus", "status", "analysis"}},
		{"\xff\xfe garbage \xc3", []string{"garbag"}},
		{"a\x00b", []string{"a", "b"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Tokens(tt.text)); diff != "" {
			t.Errorf("Tokens(%q) mismatch (-want +got):\n%s", tt.text, diff)
		}
	}
}

func TestStem(t *testing.T) {
	tests := []struct{ word, want string }{
		{"cats", "cat"},
		{"companies", "compani"},
		{"company", "compani"},
		{"play", "play"},
		{"played", "play"},
		{"planned", "plan"},
		{"falling", "fall"},
		{"missed", "miss"},
		{"need", "need"},
		{"thing", "thing"},
		{"string", "string"},
		{"time", "tim"},
		{"the", "the"},
		{"café", "café"},
	}
	for _, tt := range tests {
		keep, add, _ := stem([]byte(tt.word))
		if got := tt.word[:keep] + add; got != tt.want {
			t.Errorf("stem(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

// TestASCIIGrams checks that the character n-grams of an ASCII word are
// the same whether they are taken byte by byte or rune by rune, and that
// ascii tells ASCII from other bytes at every position of a word.
func TestASCIIGrams(t *testing.T) {
	words := []string{"a", "ab", "abc", "weather", "getweather", "3.5", "x1y2z3w4v5u6", strings.Repeat("q", 47)}
	for _, w := range words {
		var s scratch
		s.gram = append(append([]byte{'<'}, w...), '>')
		s.asciiGrams()
		byBytes := slices.Clone(s.feats)
		s.feats = s.feats[:0]
		s.runeGrams()
		if !slices.Equal(byBytes, s.feats) {
			t.Errorf("%q: n-grams %v byte by byte, %v rune by rune", w, byBytes, s.feats)
		}
		if want := 2*len(s.gram) - 5; len(byBytes) != want {
			t.Errorf("%q: %d n-grams, want %d", w, len(byBytes), want)
		}
	}
	for n := range 20 {
		b := bytes.Repeat([]byte{'a'}, n)
		if !ascii(b) {
			t.Errorf("ascii(%q) = false", b)
		}
		for i := range n {
			c := slices.Clone(b)
			c[i] = 0xc3
			if ascii(c) {
				t.Errorf("ascii(%q) = true", c)
			}
		}
	}
}
