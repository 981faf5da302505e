package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// suggestTools is the small catalog the did-you-mean tests route within.
func suggestTools() []habilis.Tool {
	return []habilis.Tool{
		{Name: "get_weather", Description: "Get the current weather for a city"},
		{Name: "get_time", Description: "Get the current time in a city"},
		{Name: "send_email", Description: "Send an e-mail to someone"},
	}
}

// TestUnknownToolSuggests checks that every method taking a tool name
// answers a misspelt one with NOT_FOUND whose message names the field and
// the tool and suggests the name it misspells, with the ResourceInfo
// naming the tool and the suggestions in the ErrorInfo's metadata; a name
// close to none gets no suggestion.
func TestUnknownToolSuggests(t *testing.T) {
	_, addr := serve(t, newRouter(t, suggestTools()), ServerOptions{})
	c := dial(t, addr, DialOptions{})
	raw := habilisv1.NewToolRouterClient(c.Conn())
	ctx := context.Background()
	inline := `[{"type":"function","function":{"name":"get_weather","description":"Weather for a city"}}]`
	tests := []struct {
		name    string
		call    func() error
		message string
		tool    string
		suggest []string
	}{
		{"GetTool", func() error { _, err := raw.GetTool(ctx, &habilisv1.GetToolRequest{Name: "get_wether"}); return err },
			`name: tool "get_wether": not found (did you mean "get_weather"?)`, "get_wether", []string{"get_weather"}},
		{"GetTool far from every name", func() error { _, err := raw.GetTool(ctx, &habilisv1.GetToolRequest{Name: "teleport"}); return err },
			`name: tool "teleport": not found`, "teleport", nil},
		{"GetTool in another case", func() error { _, err := raw.GetTool(ctx, &habilisv1.GetToolRequest{Name: "Send-Email"}); return err },
			`name: tool "Send-Email": not found (did you mean "send_email"?)`, "Send-Email", []string{"send_email"}},
		{"DeleteTools", func() error {
			_, err := raw.DeleteTools(ctx, &habilisv1.DeleteToolsRequest{Names: []string{"get_time", "get_tmie"}})
			return err
		}, `names[1]: tool "get_tmie": not found (did you mean "get_time"?)`, "get_tmie", []string{"get_time"}},
		{"Fill", func() error {
			_, err := raw.Fill(ctx, &habilisv1.FillRequest{Tool: "send_emial", Query: "mail Bob"})
			return err
		}, `tool "send_emial": not found (did you mean "send_email"?)`, "send_emial", []string{"send_email"}},
		{"Invoke", func() error {
			_, err := raw.Invoke(ctx, &habilisv1.InvokeRequest{Tool: "get_wheather", Query: "weather in Oslo", Confirm: true})
			return err
		}, `tool "get_wheather": not found (did you mean "get_weather"?)`, "get_wheather", []string{"get_weather"}},
		{"Select pinned", func() error {
			_, err := raw.Select(ctx, &habilisv1.SelectRequest{Query: "weather", Pinned: []string{"get_weather", "get_tim"}})
			return err
		}, `pinned[1]: tool "get_tim": not found (did you mean "get_time"?)`, "get_tim", []string{"get_time"}},
		{"Prefilter denied", func() error {
			_, err := raw.Prefilter(ctx, &habilisv1.PrefilterRequest{Query: "weather", Denied: []string{"sendemail"}})
			return err
		}, `denied[0]: tool "sendemail": not found (did you mean "send_email"?)`, "sendemail", []string{"send_email"}},
		{"Prefilter inline denied", func() error {
			_, err := raw.Prefilter(ctx, &habilisv1.PrefilterRequest{Query: "weather", ToolsJson: inline, Denied: []string{"get_weathr"}})
			return err
		}, `denied[0]: tool "get_weathr": not found (did you mean "get_weather"?)`, "get_weathr", []string{"get_weather"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			st := status.Convert(err)
			if st.Code() != codes.NotFound || st.Message() != tt.message {
				t.Fatalf("%v %q, want NotFound %q", st.Code(), st.Message(), tt.message)
			}
			var tool string
			var suggest []string
			for _, d := range st.Details() {
				switch d := d.(type) {
				case *errdetails.ResourceInfo:
					tool = d.GetResourceName()
				case *errdetails.ErrorInfo:
					if s, ok := d.GetMetadata()["suggestions"]; ok {
						suggest = strings.Split(s, ",")
					}
				}
			}
			if tool != tt.tool || !cmp.Equal(suggest, tt.suggest) {
				t.Errorf("details name %q suggesting %q, want %q suggesting %q", tool, suggest, tt.tool, tt.suggest)
			}
		})
	}
}

// TestClientUnknownTool checks that the client reads an unknown tool and
// its suggestions back: errors.As finds the UnknownToolError as for a
// local router, and errors.Is ErrNotFound still holds.
func TestClientUnknownTool(t *testing.T) {
	r := newRouter(t, suggestTools())
	_, addr := serve(t, r, ServerOptions{})
	c := dial(t, addr, DialOptions{})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		want *habilis.UnknownToolError
	}{
		{"Tool", func() error { _, err := c.Tool(ctx, "get_wether"); return err },
			&habilis.UnknownToolError{Name: "get_wether", Suggestions: []string{"get_weather"}}},
		{"Tool, no suggestion", func() error { _, err := c.Tool(ctx, "teleport"); return err },
			&habilis.UnknownToolError{Name: "teleport"}},
		{"DeleteTools", func() error { _, err := c.DeleteTools(ctx, []string{"gettime"}); return err },
			&habilis.UnknownToolError{Name: "gettime", Suggestions: []string{"get_time"}}},
		{"Fill", func() error { _, err := c.Fill(ctx, "send_emails", "mail Bob"); return err },
			&habilis.UnknownToolError{Name: "send_emails", Suggestions: []string{"send_email"}}},
		{"local Tool", func() error { _, err := r.Tool("get_wether"); return err },
			&habilis.UnknownToolError{Name: "get_wether", Suggestions: []string{"get_weather"}}},
	} {
		err := tc.call()
		var got *habilis.UnknownToolError
		if !errors.As(err, &got) || !errors.Is(err, habilis.ErrNotFound) {
			t.Errorf("%s: error %v, want an UnknownToolError wrapping ErrNotFound", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: UnknownToolError (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestHTTPUnknownToolSuggests checks the JSON front door: the same
// message and details as over gRPC, through the transcoder.
func TestHTTPUnknownToolSuggests(t *testing.T) {
	s, _ := serve(t, newRouter(t, suggestTools()), ServerOptions{})
	h, err := s.HTTPHandler()
	if err != nil {
		t.Fatal(err)
	}
	base := serveHTTP(t, h)
	for _, tc := range []struct {
		method, body, message, details string
	}{
		{"GetTool", `{"name": "get_wether"}`, `name: tool "get_wether": not found (did you mean "get_weather"?)`, `"suggestions":"get_weather"`},
		{"Fill", `{"tool": "send_emial", "query": "mail Bob"}`, `tool "send_emial": not found (did you mean "send_email"?)`, `"suggestions":"send_email"`},
		{"DeleteTools", `{"names": ["teleport"]}`, `names[0]: tool "teleport": not found`, `"resourceName":"teleport"`},
	} {
		code, got := postJSON(t, base+"/habilis.v1.ToolRouter/"+tc.method, tc.body)
		if code != http.StatusNotFound || got["code"] != "not_found" || got["message"] != tc.message {
			t.Errorf("%s: status %d, %v %q, want 404 not_found %q", tc.method, code, got["code"], got["message"], tc.message)
		}
		details, _ := json.Marshal(got["details"])
		if !strings.Contains(string(details), tc.details) {
			t.Errorf("%s: details %s lack %s", tc.method, details, tc.details)
		}
	}
}
