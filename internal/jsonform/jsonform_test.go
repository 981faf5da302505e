package jsonform

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestOf(t *testing.T) {
	for _, tt := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[string](), "a string"},
		{reflect.TypeFor[*string](), "a string"},
		{reflect.TypeFor[bool](), "a boolean"},
		{reflect.TypeFor[int](), "an integer"},
		{reflect.TypeFor[uint32](), "an integer"},
		{reflect.TypeFor[float64](), "a number"},
		{reflect.TypeFor[[]string](), "an array of strings"},
		{reflect.TypeFor[[]int](), "an array"},
		{reflect.TypeFor[json.RawMessage](), "JSON"},
		{reflect.TypeFor[map[string]string](), "an object of strings"},
		{reflect.TypeFor[map[string][]any](), "an object"},
		{reflect.TypeFor[struct{ A int }](), "an object"},
		{reflect.TypeFor[chan int](), "chan int"},
	} {
		if got := Of(tt.t); got != tt.want {
			t.Errorf("Of(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
}
