package vec

import (
	"fmt"
	"unsafe"
)

// Bytes returns the memory of s as bytes, in place: the form a stored index
// writes a slice of fixed-size values in, and checksums it in.
func Bytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// View returns b as a slice of T, in place: the inverse of Bytes, for
// values read back from a file mapped into memory. It returns an error when
// b's length is not a whole number of T or b is not aligned for T.
func View[T any](b []byte) ([]T, error) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b)%size != 0 {
		return nil, fmt.Errorf("%d bytes hold no whole %d-byte words", len(b), size)
	}
	if len(b) == 0 {
		return nil, nil
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%unsafe.Alignof(zero) != 0 {
		return nil, fmt.Errorf("not aligned to %d bytes", unsafe.Alignof(zero))
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size), nil
}
