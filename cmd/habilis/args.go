package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// Argument checks in place of cobra's, whose messages ("requires at least
// 1 arg(s), only received 0") name neither the command nor what is
// missing: these say which arguments of the command's Use line are
// missing, or which one is not expected.

// noArgs refuses any argument.
func noArgs(cmd *cobra.Command, args []string) error { return checkArgs(cmd, args, 0, 0) }

// minArgs wants at least n arguments.
func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error { return checkArgs(cmd, args, n, -1) }
}

// rangeArgs wants from lo to hi arguments.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error { return checkArgs(cmd, args, lo, hi) }
}

// checkArgs wants from lo to hi arguments (no limit when hi < 0).
func checkArgs(cmd *cobra.Command, args []string, lo, hi int) error {
	usage := "usage: " + cmd.Parent().CommandPath() + " " + cmd.Use
	name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	switch {
	case len(args) < lo:
		missing := positional(cmd.Use)
		if len(args) < len(missing) {
			missing = missing[len(args):]
		}
		what := "argument"
		if len(missing) > 1 {
			what += "s"
		}
		return usagef("%s: missing %s %s (%s)", name, what, strings.Join(missing, " "), usage)
	case hi >= 0 && len(args) > hi:
		return usagef("%s: unexpected argument %q (%s)", name, args[hi], usage)
	}
	return nil
}

// positional lists the arguments a Use line names ("TOOL", "QUERY..."):
// its upper-case words that are not a flag's value.
func positional(use string) []string {
	var out []string
	afterFlag := false
	for _, w := range strings.Fields(use)[1:] {
		w = strings.Trim(w, "[]()|")
		switch {
		case strings.HasPrefix(w, "-"):
			afterFlag = true
			continue
		case w != "" && w == strings.ToUpper(w) && !afterFlag:
			out = append(out, w)
		}
		afterFlag = false
	}
	if len(out) == 0 {
		return []string{"arguments"}
	}
	return out
}
