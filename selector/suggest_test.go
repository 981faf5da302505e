package selector_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/selector"
)

// TestUnknownToolSuggests checks that every router call naming a tool
// answers an unknown one with an UnknownToolError suggesting the names it
// likely misspells, and that Has answers without one.
func TestUnknownToolSuggests(t *testing.T) {
	r, _ := open(t)
	ctx := context.Background()
	tools := []habilis.Tool{
		{Name: "get_weather", Description: "Current weather for a city"},
		{Name: "get_time", Description: "Current time in a city"},
		{Name: "send_email", Description: "Send an e-mail to someone"},
	}
	if _, err := r.Load(ctx, tools, selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		want *habilis.UnknownToolError
		msg  string
	}{
		{"Tool", func() error { _, err := r.Tool("get_wether"); return err },
			&habilis.UnknownToolError{Name: "get_wether", Suggestions: []string{"get_weather"}}, `tool "get_wether": not found (did you mean "get_weather"?)`},
		{"Tool, nothing close", func() error { _, err := r.Tool("teleport"); return err },
			&habilis.UnknownToolError{Name: "teleport"}, `tool "teleport": not found`},
		{"Delete", func() error { _, err := r.Delete(ctx, []string{"get_time", "get_tmie"}); return err },
			&habilis.UnknownToolError{Name: "get_tmie", Suggestions: []string{"get_time"}}, `tool "get_tmie": not found (did you mean "get_time"?)`},
		{"Select pinned", func() error {
			_, err := r.Select(ctx, "weather", habilis.SelectOptions{Pinned: []string{"send_mail"}})
			return err
		}, &habilis.UnknownToolError{Name: "send_mail", Suggestions: []string{"send_email"}}, `pinned tool "send_mail": not found (did you mean "send_email"?)`},
		{"Select denied", func() error {
			_, err := r.Select(ctx, "weather", habilis.SelectOptions{Denied: []string{"GET_TIME"}})
			return err
		}, &habilis.UnknownToolError{Name: "GET_TIME", Suggestions: []string{"get_time"}}, `denied tool "GET_TIME": not found (did you mean "get_time"?)`},
	} {
		err := tc.call()
		var got *habilis.UnknownToolError
		if !errors.As(err, &got) || !errors.Is(err, habilis.ErrNotFound) || err.Error() != tc.msg {
			t.Errorf("%s: error %v, want %q, an UnknownToolError wrapping ErrNotFound", tc.name, err, tc.msg)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: UnknownToolError (-want +got):\n%s", tc.name, diff)
		}
	}
	if got := r.Tools(); len(got) != 3 {
		t.Errorf("after the refused delete, %d tools, want 3", len(got))
	}
	for name, want := range map[string]bool{"get_weather": true, "get_wether": false, "": false} {
		if got := r.Has(name); got != want {
			t.Errorf("Has(%q) = %v, want %v", name, got, want)
		}
	}
}
