package habilis_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/habilis-router/habilis"
)

func TestUnknownToolError(t *testing.T) {
	for _, tc := range []struct {
		err  *habilis.UnknownToolError
		want string
	}{
		{&habilis.UnknownToolError{Name: "x"}, `tool "x": not found`},
		{&habilis.UnknownToolError{Name: "get_wether", Suggestions: []string{"get_weather"}}, `tool "get_wether": not found (did you mean "get_weather"?)`},
		{&habilis.UnknownToolError{Name: "tol", Suggestions: []string{"tool", "toll"}}, `tool "tol": not found (did you mean "tool" or "toll"?)`},
		{&habilis.UnknownToolError{Name: "tol", Suggestions: []string{"tool", "toll", "top"}}, `tool "tol": not found (did you mean "tool", "toll" or "top"?)`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		wrapped := fmt.Errorf("pinned %w", tc.err)
		if !errors.Is(wrapped, habilis.ErrNotFound) {
			t.Errorf("errors.Is(%v, ErrNotFound) = false", wrapped)
		}
		var ue *habilis.UnknownToolError
		if !errors.As(wrapped, &ue) || ue != tc.err {
			t.Errorf("errors.As(%v) did not find the UnknownToolError", wrapped)
		}
	}
}
