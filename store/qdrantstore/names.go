package qdrantstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Collection and alias names. For catalog "shop" and a write of version 12:
//
//	habilis_shop_meta                       alias → habilis_shop_v12_<token>_meta
//	habilis_shop_tools                      alias → habilis_shop_v12_<token>_tools
//	habilis_shop_ex_<key(tool)>             alias → habilis_shop_v12_<token>_ex_<key(tool)>   (per-tool)
//	habilis_shop_examples                   alias → habilis_shop_v12_<token>_examples         (shared)
//	habilis_shop_commits                    the ledger: one point per version, naming its group
//
// The token is random per write, so two writers racing for the same version
// never share a collection and a failed write deletes only what it built.

const (
	suffixMeta     = "meta"
	suffixTools    = "tools"
	suffixExamples = "examples"
	prefixToolEx   = "ex_"
	suffixCommits  = "commits"
	// tokenLen is the length of the random hex token of a version's group.
	tokenLen = 8
	// keyHashLen is the number of hex digits of a tool's name hash in its
	// key: 64 bits, so 100,000 tools collide with odds around 1 in 10^9
	// (and a collision is detected and refused, never silently merged).
	keyHashLen = 16
	// keyNameLen caps the readable part of a tool's key.
	keyNameLen = 40
)

// names derives every collection and alias name of one catalog.
type names struct {
	prefix string // "habilis_<catalog>_"
}

func newNames(catalog string) names { return names{prefix: "habilis_" + catalog + "_"} }

func (n names) metaAlias() string         { return n.prefix + suffixMeta }
func (n names) toolsAlias() string        { return n.prefix + suffixTools }
func (n names) examplesAlias() string     { return n.prefix + suffixExamples }
func (n names) commitsCollection() string { return n.prefix + suffixCommits }
func (n names) toolExamplesAlias(tool string) string {
	return n.prefix + prefixToolEx + toolKey(tool)
}

// group names the collections of one write: "v<version>_<token>".
func group(version uint64, token string) string {
	return "v" + strconv.FormatUint(version, 10) + "_" + token
}

func (n names) collection(group, suffix string) string { return n.prefix + group + "_" + suffix }
func (n names) metaCollection(g string) string         { return n.collection(g, suffixMeta) }
func (n names) toolsCollection(g string) string        { return n.collection(g, suffixTools) }
func (n names) examplesCollection(g string) string     { return n.collection(g, suffixExamples) }
func (n names) toolExamplesCollection(g, tool string) string {
	return n.collection(g, prefixToolEx+toolKey(tool))
}

// parseCollection reports the version and group of one of this catalog's
// versioned collections, and ok false for any other name (aliases, other
// catalogs, foreign collections).
func (n names) parseCollection(name string) (version uint64, g string, ok bool) {
	rest, found := strings.CutPrefix(name, n.prefix+"v")
	if !found {
		return 0, "", false
	}
	num, rest, found := strings.Cut(rest, "_")
	if !found || num == "" {
		return 0, "", false
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil || strconv.FormatUint(v, 10) != num {
		return 0, "", false
	}
	if len(rest) < tokenLen+2 || rest[tokenLen] != '_' || !isHex(rest[:tokenLen]) {
		return 0, "", false
	}
	return v, group(v, rest[:tokenLen]), true
}

// isAlias reports whether name is one of this catalog's alias names.
func (n names) isAlias(name string) bool {
	rest, ok := strings.CutPrefix(name, n.prefix)
	if !ok {
		return false
	}
	return rest == suffixMeta || rest == suffixTools || rest == suffixExamples || strings.HasPrefix(rest, prefixToolEx)
}

// toolKey names a tool inside collection names. Qdrant collection names are
// directories on disk, possibly on a case-insensitive file system, so the
// readable part is lower-cased with everything but [a-z0-9-] turned into
// '-', and a hash of the exact name keeps distinct names ("Get.x", "get-x")
// apart.
func toolKey(tool string) string {
	var b strings.Builder
	for _, r := range tool {
		if b.Len() >= keyNameLen {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteByte('-')
		}
	}
	sum := sha256.Sum256([]byte(tool))
	return b.String() + "_" + hex.EncodeToString(sum[:])[:keyHashLen]
}

// checkKeys refuses a catalog in which two tools would share a collection.
func checkKeys(tools []string) error {
	seen := make(map[string]string, len(tools))
	for _, t := range tools {
		k := toolKey(t)
		if other, dup := seen[k]; dup && other != t {
			return fmt.Errorf("tools %q and %q map to the same collection key %q", other, t, k)
		}
		seen[k] = t
	}
	return nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
