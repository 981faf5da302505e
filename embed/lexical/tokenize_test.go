package lexical

import (
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
