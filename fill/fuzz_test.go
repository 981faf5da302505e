package fill

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// FuzzFill runs the extractor and the extractive check on arbitrary
// requests and proposals: they must never panic, and whatever the
// extractor proposes the check must keep.
func FuzzFill(f *testing.F) {
	f.Add("what's the weather in Paris for 3 days", `{"city":"Paris","days":3}`)
	f.Add("send 1,000.5 to alice@example.com on March 5th, 2024 \"now\"", `{"to":"x","amount":"1,000.5"}`)
	f.Add("twenty-five thousand and three hundred", `{"tags":[null,{"a":1}],"body":{}}`)
	f.Add("don't include images, 15% off, https://x.y/z.", `{"include_images":false,"unit":"celsius"}`)
	f.Add("\xff\xfe 'unterminated \u201cquote", `[1,2]`)
	f.Add("a=1, b=-3 and c=.5 in São Paulo, Brasil", `{"a":1e400}`)
	f.Add("flights from oslo to são paulo-x tomorrow in 5 minutes", `{"city":"oslo"}`)
	f.Add("weather in  rio  de - janeiro,at", `{}`)
	schemas := []*Schema{mustSchema(f, checkSchema), mustSchema(f, weatherSchema), nil}
	tools := []string{checkSchema, weatherSchema, `{}`}
	now := time.Date(2024, 3, 14, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, query, proposal string) {
		var args map[string]any
		_ = json.Unmarshal([]byte(proposal), &args)
		for i, s := range schemas {
			Check(s, query, args, CheckOptions{Now: now})
			Score(Acceptable{"city": {"Paris", ""}}, args, query, s)
			got, err := (&Extractor{Now: now}).Fill(context.Background(), toolWith(tools[i]), query)
			if err != nil {
				t.Fatalf("Fill(%q): %v", query, err)
			}
			if _, rejected := Check(s, query, got, CheckOptions{Now: now}); s != nil && len(rejected) > 0 {
				t.Errorf("Check(Fill(%q)) rejected %v", query, rejected)
			}
			Validate(s, got)
			Question("x_y", s)
		}
	})
}
