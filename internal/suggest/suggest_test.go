package suggest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNames(t *testing.T) {
	tools := []string{"get_weather", "get_weather_forecast", "get_time", "convert_timezone", "web_search", "news_search", "set_reminder", "calculator"}
	for _, tc := range []struct {
		name  string
		known []string
		want  []string
	}{
		{"get_wether", tools, []string{"get_weather"}},
		{"Get-Weather", tools, []string{"get_weather"}},
		{"getweather", tools, []string{"get_weather"}},
		{"get_tmie", tools, []string{"get_time"}},     // a transposition is one edit
		{"calculater", tools, []string{"calculator"}}, // a substitution
		{"web_serch", tools, []string{"web_search"}},  // a deletion
		{"get_weather", tools, nil},                   // never itself
		{"weather", tools, nil},                       // too far from every name
		{"send_email", tools, nil},                    // unrelated
		{"ab", []string{"a", "abc", "b"}, nil},        // too short to guess at
		{"nmae", []string{"name", "description"}, []string{"name"}},
		{"exmples", []string{"examples", "name"}, []string{"examples"}},
		{"tol", []string{"tool", "toll", "tl", "top", "xyz"}, []string{"tl", "toll", "tool"}}, // at most Max, ties alphabetical
		{"fooo", []string{"foo1", "foo", "fo", "fooooo"}, []string{"foo", "foo1"}},
		{"wethr", []string{"weather", "wether"}, []string{"wether"}},                               // five letters: one edit, not two
		{"wethrs", []string{"weathers"}, []string{"weathers"}},                                     // six: two
		{"abcdefg", []string{"abcdefgxy", "abcdefx", "abzzzzz"}, []string{"abcdefx", "abcdefgxy"}}, // closest first,
		{"séarch", []string{"search"}, []string{"search"}},                                         // runes, not bytes
		{"", tools, nil},
	} {
		if got := Names(tc.name, tc.known); !cmp.Equal(got, tc.want) {
			t.Errorf("Names(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestNamesLongest: a name of maxRunes letters is still matched; one
// longer is pasted text, whatever known holds.
func TestNamesLongest(t *testing.T) {
	long := strings.Repeat("ab", maxRunes/2)
	for _, tc := range []struct {
		name, known string
		want        []string
	}{
		{long[:maxRunes-1] + "x", long, []string{long}},
		{long + "x", long + "y", nil},
		{long + "abx", long + "aby", nil},
	} {
		if got := Names(tc.name, []string{tc.known}); !cmp.Equal(got, tc.want) {
			t.Errorf("Names(%d letters, %d letters) = %q, want %q", len(tc.name), len(tc.known), got, tc.want)
		}
	}
}

func TestNamesAtMost(t *testing.T) {
	known := []string{"tool_a", "tool_b", "tool_c", "tool_d", "tool_e"}
	got := Names("tool_x", known)
	if want := []string{"tool_a", "tool_b", "tool_c"}; !cmp.Equal(got, want) {
		t.Errorf("Names(tool_x) = %q, want %q", got, want)
	}
}

func TestClosest(t *testing.T) {
	if got := Closest("paramters", []string{"name", "parameters", "strict"}); got != "parameters" {
		t.Errorf("Closest(paramters) = %q, want parameters", got)
	}
	if got := Closest("zzz", []string{"name"}); got != "" {
		t.Errorf("Closest(zzz) = %q, want none", got)
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b  string
		limit int
		want  int
	}{
		{"kitten", "sitting", 5, 3},
		{"abcd", "bacd", 2, 1},
		{"abcdefgh", "hgfedcba", 2, 3}, // stops past the limit
		{"abc", "abcdefg", 2, 3},       // lengths alone exceed it
		{"", "ab", 2, 2},
		{"getwether", "getweather", 2, 1},
		{"ca", "abc", 3, 3}, // not 2: a transposed pair is not edited again
		{"xab", "ab", 2, 1}, // the band starts at the first column
		{"xyzabcd", "abcd", 3, 3},
		{"abcdefgh", "bcdefgh", 1, 1}, // the band moves right of the first column
		{"abcdefgh", "xabcdefh", 2, 2},
	} {
		if got := dist(tc.a, tc.b, tc.limit); got != tc.want {
			t.Errorf("distance(%q, %q, %d) = %d, want %d", tc.a, tc.b, tc.limit, got, tc.want)
		}
	}
}

// dist is distance over strings.
func dist(a, b string, limit int) int {
	var rows [3][maxRunes + 1]int
	return distance([]rune(a), []rune(b), limit, &rows)
}

// fullDistance is the optimal string alignment distance computed over
// every cell, against which distance's band and early stop are checked.
func fullDistance(a, b []rune) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func FuzzNames(f *testing.F) {
	f.Add("get_wether", "get_weather")
	f.Add("ab", "ba")
	f.Add("ca", "abc")
	f.Fuzz(func(t *testing.T, a, b string) {
		got := Names(a, []string{b, a})
		if len(got) > 1 || len(got) == 1 && got[0] != b {
			t.Fatalf("Names(%q, [%q %q]) = %q", a, b, a, got)
		}
		ra, rb := []rune(a), []rune(b)
		if len(ra) > maxRunes || len(rb) > maxRunes {
			return
		}
		full := fullDistance(ra, rb)
		for limit := range 4 {
			if got, want := dist(a, b, limit), min(full, limit+1); got != want {
				t.Fatalf("distance(%q, %q, %d) = %d, want %d", a, b, limit, got, want)
			}
		}
	})
}

// BenchmarkNames measures a suggestion among 5,000 tool names, the cost a
// lookup of an unknown tool adds.
func BenchmarkNames(b *testing.B) {
	known := make([]string, 5000)
	for i := range known {
		known[i] = fmt.Sprintf("service_%d_get_item_%d", i%37, i)
	}
	for b.Loop() {
		Names("service_3_get_itme_39", known)
	}
}
