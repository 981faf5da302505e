package qdrantstore

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNames(t *testing.T) {
	n := newNames("shop")
	g := group(12, "0a1b2c3d")
	got := []string{
		n.metaAlias(), n.toolsAlias(), n.examplesAlias(), n.toolExamplesAlias("get.weather"),
		n.metaCollection(g), n.toolsCollection(g), n.examplesCollection(g), n.toolExamplesCollection(g, "get.weather"),
	}
	key := toolKey("get.weather")
	want := []string{
		"habilis_shop_meta", "habilis_shop_tools", "habilis_shop_examples", "habilis_shop_ex_" + key,
		"habilis_shop_v12_0a1b2c3d_meta", "habilis_shop_v12_0a1b2c3d_tools", "habilis_shop_v12_0a1b2c3d_examples",
		"habilis_shop_v12_0a1b2c3d_ex_" + key,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names mismatch (-want +got):\n%s", diff)
	}
}

// validName is what every generated name must match: safe as a directory
// name on any file system and in Qdrant's rules.
var validName = regexp.MustCompile(`^[a-z0-9_A-Z-]{1,255}$`)

func TestToolKey(t *testing.T) {
	tests := []struct {
		tool, readable string
	}{
		{"get_weather", "get-weather"},
		{"get.weather", "get-weather"},
		{"Get-Weather", "get-weather"},
		{"fs.read_file.v2", "fs-read-file-v2"},
		{strings.Repeat("x", 64), strings.Repeat("x", keyNameLen)},
	}
	for _, tt := range tests {
		k := toolKey(tt.tool)
		readable, hash, ok := strings.Cut(k, "_")
		if !ok || readable != tt.readable || len(hash) != keyHashLen || !isHex(hash) {
			t.Errorf("toolKey(%q) = %q, want %q_<%d hex digits>", tt.tool, k, tt.readable, keyHashLen)
		}
		if toolKey(tt.tool) != k {
			t.Errorf("toolKey(%q) is not deterministic", tt.tool)
		}
	}
}

func TestToolKeysDistinct(t *testing.T) {
	// Names that sanitise to the same readable part keep distinct keys.
	tools := []string{"get.weather", "get-weather", "get_weather", "Get.weather", "GET_WEATHER", "get.weather.", "get..weather"}
	seen := map[string]string{}
	for _, tool := range tools {
		k := toolKey(tool)
		if other, dup := seen[k]; dup {
			t.Errorf("toolKey(%q) = toolKey(%q) = %q", tool, other, k)
		}
		seen[k] = tool
	}
	if err := checkKeys(tools); err != nil {
		t.Errorf("checkKeys(%q) = %v, want nil", tools, err)
	}
	if err := checkKeys([]string{"a", "a"}); err != nil {
		t.Errorf("checkKeys of one name twice = %v, want nil (not a collision)", err)
	}
	var many []string
	for i := range 20000 {
		many = append(many, fmt.Sprintf("tool.%d", i))
	}
	if err := checkKeys(many); err != nil {
		t.Errorf("checkKeys(20000 tools) = %v", err)
	}
}

func TestNamesAreValidAndShort(t *testing.T) {
	// The longest catalog, tool name and version still fit Qdrant's limit.
	n := newNames(strings.Repeat("C", maxCatalogLen))
	g := group(math.MaxUint64, "ffffffff")
	tool := strings.Repeat("é", 32) // 64 bytes, all replaced
	for _, name := range []string{
		n.toolExamplesCollection(g, tool), n.toolExamplesAlias(tool), n.examplesCollection(g),
		n.toolsCollection(g), n.metaCollection(g),
	} {
		if !validName.MatchString(name) {
			t.Errorf("name %q (%d bytes) is not a valid collection name", name, len(name))
		}
	}
}

func TestParseCollection(t *testing.T) {
	n := newNames("a")
	tests := []struct {
		name    string
		version uint64
		group   string
		ok      bool
	}{
		{"habilis_a_v7_0123abcd_tools", 7, "v7_0123abcd", true},
		{"habilis_a_v0_ffffffff_meta", 0, "v0_ffffffff", true},
		{"habilis_a_v18446744073709551615_00000000_ex_x_0123456789abcdef", math.MaxUint64, "v18446744073709551615_00000000", true},
		{"habilis_a_tools", 0, "", false},                                // alias
		{"habilis_a_ex_v1_0123abcd_x", 0, "", false},                     // a tool's alias, whatever the tool is called
		{"habilis_a-b_v7_0123abcd_tools", 0, "", false},                  // catalog "a-b"
		{"habilis_ab_v7_0123abcd_tools", 0, "", false},                   // catalog "ab"
		{"habilis_a_v07_0123abcd_tools", 0, "", false},                   // not canonical
		{"habilis_a_v7_0123ABCD_tools", 0, "", false},                    // not our hex
		{"habilis_a_v7_0123abc_tools", 0, "", false},                     // short token
		{"habilis_a_v7_0123abcd", 0, "", false},                          // no suffix
		{"habilis_a_v_0123abcd_tools", 0, "", false},                     // no number
		{"habilis_a_v99999999999999999999_0123abcd_tools", 0, "", false}, // overflow
		{"other", 0, "", false},
	}
	for _, tt := range tests {
		v, g, ok := n.parseCollection(tt.name)
		if v != tt.version || g != tt.group || ok != tt.ok {
			t.Errorf("parseCollection(%q) = %d, %q, %v; want %d, %q, %v", tt.name, v, g, ok, tt.version, tt.group, tt.ok)
		}
	}
	// Every collection the names produce parses back to its group.
	gg := group(42, "deadbeef")
	for _, c := range []string{n.metaCollection(gg), n.toolsCollection(gg), n.examplesCollection(gg), n.toolExamplesCollection(gg, "x.y")} {
		if v, g, ok := n.parseCollection(c); !ok || v != 42 || g != gg {
			t.Errorf("parseCollection(%q) = %d, %q, %v; want 42, %q, true", c, v, g, ok, gg)
		}
	}
}

func TestIsAlias(t *testing.T) {
	n := newNames("a")
	for name, want := range map[string]bool{
		n.metaAlias():                    true,
		n.toolsAlias():                   true,
		n.examplesAlias():                true,
		n.toolExamplesAlias("x.y"):       true,
		"habilis_a-b_tools":              false,
		"habilis_ab_meta":                false,
		n.toolsCollection("v1_00000000"): false,
		"habilis_a_":                     false,
	} {
		if got := n.isAlias(name); got != want {
			t.Errorf("isAlias(%q) = %v, want %v", name, got, want)
		}
	}
}
