// Command fill_helper is the tool that cmd/habilis's run tests execute: it
// proves it ran by writing what it read on stdin to the file named by its
// first argument, and prints what it received as a JSON object.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fill_helper MARKER [ARG...]")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], in, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := map[string]any{"stdin": string(in), "args": os.Args[2:], "env": os.Environ()}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}
