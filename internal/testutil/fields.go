package testutil

import (
	"reflect"

	"github.com/habilis-router/habilis"
)

// Unset returns the paths of v's exported fields left at their zero
// value, looking into structs, pointers and the elements of slices (a
// vector, dense or sparse, and bytes count as one value), skipping the
// paths in ignore ("Record.Tool.Margin"; "[]" marks a slice's elements). A test
// whose value must have every field set, so that a round trip covers each,
// fails on them: a field added to a type then has to be added to the test.
func Unset(v any, ignore ...string) []string {
	skip := make(map[string]bool, len(ignore))
	for _, p := range ignore {
		skip[p] = true
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	return unset(rv, rv.Type().Name(), skip)
}

var vectorType = reflect.TypeFor[habilis.Vector]()

func unset(v reflect.Value, path string, skip map[string]bool) []string {
	if skip[path] {
		return nil
	}
	if v.IsZero() || (v.Kind() == reflect.Slice && v.Len() == 0) {
		return []string{path}
	}
	var out []string
	switch {
	case v.Type() == vectorType, v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
	case v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface:
		out = unset(v.Elem(), path, skip)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				out = append(out, unset(v.Field(i), path+"."+f.Name, skip)...)
			}
		}
	case v.Kind() == reflect.Slice:
		for i := range v.Len() {
			out = append(out, unset(v.Index(i), path+"[]", skip)...)
		}
	}
	return out
}
