package embedcache

import (
	"bytes"
	"math"
	"testing"
)

// FuzzDecode checks that an entry of the cache, whatever a disk or
// another program left in the file, never panics decode; that what it
// accepts is a finite unit vector of the model's dimension; and that such
// a vector, encoded, reads back to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(encode([]float32{0.6, 0.8}), 2)
	f.Add(encode([]float32{1, 0, 0}), 3)
	f.Add(encode([]float32{0.6, 0.8}), 3)
	f.Add(encode([]float32{float32(math.NaN()), 1}), 2)
	f.Add(encode([]float32{2, 0}), 2)
	f.Add([]byte{1, 2, 3}, 1)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, b []byte, dim int) {
		if dim < 0 || dim > 1<<12 {
			return
		}
		v, ok := decode(b, dim)
		if !ok {
			return
		}
		var norm float64
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("decode(%x, %d) accepted %v", b, dim, v)
			}
			norm += float64(x) * float64(x)
		}
		if len(v) != dim || math.Abs(norm-1) > 1e-3 {
			t.Fatalf("decode(%x, %d) = %d values of norm² %v, want %d of norm 1", b, dim, len(v), norm, dim)
		}
		if !bytes.Equal(encode(v), b) {
			t.Errorf("encode(decode(%x)) = %x", b, encode(v))
		}
	})
}
