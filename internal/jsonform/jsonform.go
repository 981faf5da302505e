// Package jsonform names, in an error a person reads, the JSON a Go type
// decodes from: "a string", "an array of strings", "an object". Decoding
// errors (json.UnmarshalTypeError) name Go's types instead ("[]string",
// "int"), which a user who wrote the JSON never saw.
package jsonform

import "reflect"

// Of names the JSON values that decode into t.
func Of(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return Of(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		switch e := t.Elem(); {
		case t.Kind() == reflect.Slice && e.Kind() == reflect.Uint8: // json.RawMessage: any value
			return "JSON"
		case e.Kind() == reflect.String:
			return "an array of strings"
		}
		return "an array"
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return "an object of strings"
		}
		return "an object"
	case reflect.Struct:
		return "an object"
	}
	return t.String()
}
