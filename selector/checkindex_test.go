package selector_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/habilis-router/habilis/internal/layout"
	"github.com/habilis-router/habilis/selector"
)

// TestCheckIndexAndIndexAt checks what `store check` and `migrate` do
// with a stored index: CheckIndex finds nothing wrong in one a load
// stored, names a section whose bytes changed and refuses what is no
// index; IndexAt restamps a copy with another catalog version, which
// still checks whole, leaves the original as it was and refuses what is
// no index.
func TestCheckIndexAndIndexAt(t *testing.T) {
	_, st := loaded(t)
	si, err := st.Index(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer si.Release()
	data := slices.Clone(si.Data)
	if p := selector.CheckIndex(data); len(p) != 0 {
		t.Errorf("CheckIndex(a stored index) = %q, want no problems", p)
	}
	moved := selector.IndexAt(data, si.Meta.Version+41)
	if moved == nil || slices.Equal(moved, data) || !slices.Equal(data, si.Data) {
		t.Fatalf("IndexAt(data, %d) = %d bytes, equal to data %v, data unchanged %v; want a changed copy",
			si.Meta.Version+41, len(moved), slices.Equal(moved, data), slices.Equal(data, si.Data))
	}
	if p := selector.CheckIndex(moved); len(p) != 0 {
		t.Errorf("CheckIndex(IndexAt(data)) = %q, want no problems", p)
	}
	if l, err := layout.Parse(moved); err != nil || l.Version != si.Meta.Version+41 {
		t.Errorf("IndexAt(data, %d) reads as version %v (%v)", si.Meta.Version+41, l, err)
	}
	damaged := slices.Clone(data)
	damaged[len(damaged)-1] ^= 0x5a
	if p := selector.CheckIndex(damaged); len(p) != 1 || !strings.Contains(p[0], "fails its checksum") {
		t.Errorf("CheckIndex(an index with a byte changed) = %q, want one section failing its checksum", p)
	}
	for _, junk := range [][]byte{nil, []byte("not an index at all, but long enough to have a header of sixty-four bytes"), data[:40]} {
		if p := selector.CheckIndex(junk); len(p) != 1 {
			t.Errorf("CheckIndex(%d bytes of junk) = %q, want one problem", len(junk), p)
		}
		if got := selector.IndexAt(junk, 3); got != nil {
			t.Errorf("IndexAt(%d bytes of junk) = %d bytes, want nil", len(junk), len(got))
		}
	}
}
