package mcpgate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
)

// TestReadConfigAndOverlay checks the files ReadConfig and ReadOverlay
// are given: read and parsed when they are right, and otherwise an error
// naming the path once: a file that does not exist, a directory, a file
// too large to be a config (a log or a database given by mistake).
func TestReadConfigAndOverlay(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	config := write("servers.json", "\xEF\xBB\xBF"+`{"mcpServers": {"fs": {"command": "fs-server"}}}`)
	overlay := write("overlay.json", `{"read_file": {"examples": ["show me notes.txt"]}}`)
	big := write("big.log", `{"mcpServers": {}}`+strings.Repeat(" ", maxConfigSize))
	missing := filepath.Join(dir, "nope.json")

	servers, err := ReadConfig(config)
	if diff := cmp.Diff([]Server{{Name: "fs", Transport: TransportStdio, Command: "fs-server"}}, servers); err != nil || diff != "" {
		t.Errorf("ReadConfig(%s) = %v (-want +got):\n%s", config, err, diff)
	}
	ov, err := ReadOverlay(overlay)
	if diff := cmp.Diff(Overlay{"read_file": {"show me notes.txt"}}, ov); err != nil || diff != "" {
		t.Errorf("ReadOverlay(%s) = %v (-want +got):\n%s", overlay, err, diff)
	}
	for _, tt := range []struct {
		path string
		is   error
		want string
	}{
		{missing, fs.ErrNotExist, "no such file"},
		{dir, nil, "is a directory"},
		{big, habilis.ErrInvalid, "is over 4194304 bytes; is it the right file?"},
		{overlay, habilis.ErrInvalid, "mcpServers"},
	} {
		_, err := ReadConfig(tt.path)
		checkReadError(t, "ReadConfig", tt.path, err, tt.is, tt.want)
		if tt.path == overlay {
			continue
		}
		_, err = ReadOverlay(tt.path)
		checkReadError(t, "ReadOverlay", tt.path, err, tt.is, tt.want)
	}
}

func checkReadError(t *testing.T, op, path string, err, is error, want string) {
	t.Helper()
	if err == nil || (is != nil && !errors.Is(err, is)) || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), path) != 1 {
		t.Errorf("%s(%s) error = %v, want one wrapping %v, saying %q and naming the path once", op, path, err, is, want)
	}
}
