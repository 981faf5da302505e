package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what `habilis version` prints, from the build information
// the Go toolchain embeds.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

func newVersionCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVersion(cmd.Context(), g, cmd.OutOrStdout())
		},
	}
}

func runVersion(_ context.Context, g *globalOptions, stdout io.Writer) error {
	v := currentVersion()
	if g.json {
		return writeJSON(stdout, v)
	}
	fmt.Fprintf(stdout, "habilis %s", v.Version)
	if v.Revision != "" {
		fmt.Fprintf(stdout, " (%.12s", v.Revision)
		if v.Modified {
			fmt.Fprint(stdout, ", modified")
		}
		fmt.Fprint(stdout, ")")
	}
	fmt.Fprintf(stdout, " %s\n", v.Go)
	return nil
}

// currentVersion reads the version from the build information.
func currentVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	return v
}
