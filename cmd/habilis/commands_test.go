package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habilis-router/habilis"
)

func noEnv(string) string { return "" }

func TestExecuteInProcess(t *testing.T) {
	store := filepath.Join(t.TempDir(), "habilis.db")
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"--store", store, "load", testdata("tools.json")}, &stdout, &stderr, noEnv); code != exitOK {
		t.Fatalf("load: exit %d: %s", code, stderr.String())
	}
	g := &globalOptions{store: store, embedder: "lexical", json: true, stderr: &stderr, getenv: noEnv}
	stdout.Reset()
	if err := runSelect(context.Background(), &selectOptions{g: g, query: "send an email to Zoe", mode: "hybrid", k: 3}, &stdout); err != nil {
		t.Fatalf("runSelect: %v", err)
	}
	var d habilis.Decision
	if err := json.Unmarshal(stdout.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Matches) == 0 || d.Matches[0].Tool != "send_email" {
		t.Errorf("runSelect(%q) = %v, want send_email first", "send an email to Zoe", d.Matches)
	}
	if len(d.Matches) > 3 {
		t.Errorf("runSelect(-k 3) returned %d matches", len(d.Matches))
	}

	err := runSelect(context.Background(), &selectOptions{g: g, query: "x", mode: "fuzzy", k: 3}, &stdout)
	var ue *usageError
	if !errors.As(err, &ue) {
		t.Errorf("runSelect(mode fuzzy) = %v, want a usage error", err)
	}
}

func TestExecuteEnvironment(t *testing.T) {
	store := filepath.Join(t.TempDir(), "env.db")
	env := func(k string) string {
		return map[string]string{"HABILIS_STORE": store, "HABILIS_EMBEDDER": "lexical"}[k]
	}
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"load", "--json", testdata("lone.json")}, &stdout, &stderr, env); code != exitOK {
		t.Fatalf("load with HABILIS_STORE: exit %d: %s", code, stderr.String())
	}
	stdout.Reset()
	if code := execute(context.Background(), []string{"tools", "list"}, &stdout, &stderr, env); code != exitOK {
		t.Fatalf("tools list with HABILIS_STORE: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "get_weather") {
		t.Errorf("tools list with HABILIS_STORE=%s:\n%s", store, stdout.String())
	}
}

func TestNewEmbedder(t *testing.T) {
	tests := []struct {
		spec  string
		kind  string // "" means a usage error
		model string
	}{
		{"lexical", "lexical", ""},
		{"ollama:nomic-embed-text", "ollama", "nomic-embed-text"},
		{"ollama:all-minilm:l6-v2@gpu-box:11434", "ollama", "all-minilm:l6-v2"},
		{"openai:text-embedding-3-small@http://localhost:8080/v1", "openai", "text-embedding-3-small"},
		{"ollama:", "", ""},
		{"openai", "", ""},
		{"lexical:big", "", ""},
		{"bert", "", ""},
	}
	for _, tt := range tests {
		g := &globalOptions{embedder: tt.spec, getenv: noEnv}
		emb, err := g.newEmbedder()
		if tt.kind == "" {
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Errorf("newEmbedder(%q) = %v, want a usage error", tt.spec, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("newEmbedder(%q): %v", tt.spec, err)
			continue
		}
		if info := emb.Info(); info.Kind != tt.kind || info.Model != tt.model {
			t.Errorf("newEmbedder(%q) = %s %s, want %s %s", tt.spec, info.Kind, info.Model, tt.kind, tt.model)
		}
	}
}

func TestRouterConfigPairsModelsWithLexical(t *testing.T) {
	for _, tt := range []struct {
		spec        string
		wantLexical bool
	}{{"lexical", false}, {"ollama:nomic-embed-text", true}, {"openai:text-embedding-3-small", true}} {
		g := &globalOptions{embedder: tt.spec, getenv: noEnv}
		cfg, err := g.routerConfig()
		if err != nil {
			t.Fatalf("routerConfig(%q): %v", tt.spec, err)
		}
		if got := cfg.Lexical != nil; got != tt.wantLexical {
			t.Errorf("routerConfig(%q).Lexical set = %v, want %v", tt.spec, got, tt.wantLexical)
		}
	}
}
