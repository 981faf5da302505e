package api

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/habilis-router/habilis"
	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"github.com/habilis-router/habilis/internal/testutil"
	"github.com/habilis-router/habilis/selector"
	"github.com/habilis-router/habilis/store/boltstore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestReadOnlyMethods holds every method of the ToolRouter service to one
// side: a write, which a ReadOnly server refuses over gRPC and JSON with
// FAILED_PRECONDITION (reason READ_ONLY, saying why), or a read, which it
// answers. The store under the router is writable, so that the refusal is
// the server's own, whatever the store; nothing is written.
func TestReadOnlyMethods(t *testing.T) {
	// A sound JSON request for each method.
	writes := map[string]string{
		"UpsertTools": `{"catalog_json": "[{\"name\": \"teleport\", \"description\": \"Beam a person to another place.\"}]"}`,
		"DeleteTools": `{"names": ["send_email"]}`,
	}
	reads := map[string]string{
		"Select":      `{"query": "weather in Oslo"}`,
		"SelectBatch": `{"queries": ["weather in Oslo", "mail Bob the report"]}`,
		"Prefilter":   `{"query": "weather in Oslo"}`,
		"ListTools":   `{}`,
		"GetTool":     `{"name": "get_weather"}`,
		"Collisions":  `{}`,
		"Fill":        `{"tool": "get_weather", "query": "weather in Oslo"}`,
		"Invoke":      `{"tool": "get_weather", "query": "weather in Oslo", "confirm": true}`,
	}
	methods := habilisv1.File_habilis_v1_habilis_proto.Services().ByName("ToolRouter").Methods()
	for i := range methods.Len() {
		m := string(methods.Get(i).Name())
		if _, w := writes[m]; w == (reads[m] != "") {
			t.Errorf("method %s: list it among the writes or the reads, and refuse it in a ReadOnly server (Server.writable) if it writes", m)
		}
	}

	r := newRouter(t, testTools(t))
	s, addr := serve(t, r, ServerOptions{ReadOnly: true})
	h, err := s.HTTPHandler()
	if err != nil {
		t.Fatal(err)
	}
	base := serveHTTP(t, h)
	version, tools := r.Version(), r.Tools()

	for _, m := range slices.Sorted(maps.Keys(writes)) {
		status, got := postJSON(t, base+"/habilis.v1.ToolRouter/"+m, writes[m])
		details, _ := json.Marshal(got["details"])
		msg, _ := got["message"].(string)
		// Connect sends failed_precondition as 400 (connect-go's
		// httpStatusFromCode); its code and the reason tell it apart.
		if status != 400 || got["code"] != "failed_precondition" || !strings.Contains(string(details), `"reason":"READ_ONLY"`) ||
			!strings.HasPrefix(msg, m+": the server was started with --read-only") {
			t.Errorf("JSON %s on a read-only server: status %d, %v; want 400 failed_precondition, reason READ_ONLY, saying --read-only", m, status, got)
		}
	}
	c := dial(t, addr, DialOptions{})
	ctx := context.Background()
	_, upsertErr := c.UpsertTools(ctx, []habilis.Tool{{Name: "teleport", Description: "Beam a person to another place."}}, UpsertOptions{})
	_, deleteErr := c.DeleteTools(ctx, []string{"send_email"})
	for _, err := range []error{upsertErr, deleteErr} {
		if !errors.Is(err, habilis.ErrReadOnly) || errors.Is(err, habilis.ErrEmbedderMismatch) || status.Code(err) != codes.FailedPrecondition ||
			!strings.Contains(err.Error(), "--read-only") {
			t.Errorf("gRPC write on a read-only server: error %v (code %v), want %v (FailedPrecondition) saying --read-only", err, status.Code(err), habilis.ErrReadOnly)
		}
	}

	for _, m := range slices.Sorted(maps.Keys(reads)) {
		if status, got := postJSON(t, base+"/habilis.v1.ToolRouter/"+m, reads[m]); status != 200 {
			t.Errorf("JSON %s on a read-only server: status %d, %v; want 200", m, status, got)
		}
	}
	if r.Version() != version {
		t.Errorf("catalog version %d after refused writes, want %d", r.Version(), version)
	}
	if diff := cmp.Diff(tools, r.Tools()); diff != "" {
		t.Errorf("catalog changed after refused writes (-before +after):\n%s", diff)
	}
}

// TestReadOnlyStore serves a bbolt file opened read-only from a server
// that does not refuse writes itself: the store's refusal reaches the
// client as the server's does, FAILED_PRECONDITION with reason READ_ONLY
// (the request was sound, so not INVALID_ARGUMENT).
func TestReadOnlyStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habilis.db")
	ws := testutil.BoltStore(t, path)
	w := testutil.LexicalRouter(t, ws)
	if _, err := w.Load(context.Background(), testTools(t), selector.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	ws.Close() // a writer holds the file alone
	st, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, addr := serve(t, testutil.LexicalRouter(t, st), ServerOptions{})
	_, err = dial(t, addr, DialOptions{}).DeleteTools(context.Background(), []string{"send_email"})
	if !errors.Is(err, habilis.ErrReadOnly) || errors.Is(err, habilis.ErrInvalid) || status.Code(err) != codes.FailedPrecondition ||
		!strings.Contains(err.Error(), path) {
		t.Errorf("DeleteTools over a read-only store: error %v (code %v), want %v (FailedPrecondition) naming %s", err, status.Code(err), habilis.ErrReadOnly, path)
	}
	// A bare FAILED_PRECONDITION, without ErrorInfo, keeps meaning what it
	// meant before ErrReadOnly shared the code.
	if err := fromStatus(status.Error(codes.FailedPrecondition, "x")); !errors.Is(err, habilis.ErrEmbedderMismatch) {
		t.Errorf("fromStatus(bare FAILED_PRECONDITION) = %v, want %v", err, habilis.ErrEmbedderMismatch)
	}
}
