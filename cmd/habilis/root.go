package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/fill/executor"
	"github.com/habilis-router/habilis/selector"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes, documented in the package comment and the root help.
const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitCollisions = 3
	exitAccuracy   = 4
)

// defaultStore is the bbolt file used when neither --store nor
// HABILIS_STORE says otherwise.
const defaultStore = "habilis.db"

// globalOptions are the flags every command shares. One value is built per
// execution and passed down to every command, so nothing is global.
type globalOptions struct {
	// store is a bbolt file path or a qdrant:// URL.
	store string
	// embedder is "lexical", "ollama:MODEL[@HOST]" or "openai:MODEL[@BASEURL]".
	embedder string
	// apiKeyFile holds the OpenAI-compatible server's key when set.
	apiKeyFile string
	// reindex re-embeds a store built by another embedder instead of
	// refusing it.
	reindex bool
	// noEmbedCache turns off the on-disk cache of a model embedder's
	// vectors (see embedCacheDir).
	noEmbedCache bool
	// serving is set by the commands that serve requests (serve, proxy,
	// mcp) before they build the embedder: their users' requests are not
	// written to the embedding cache, only catalog texts are.
	serving bool
	// remote is the address of a habilis server; "" means the local store.
	remote string
	// json prints results as JSON instead of tables.
	json     bool
	logLevel string

	// stderr receives progress, logs and errors; getenv reads the
	// environment (tests pass their own). tty says stderr is a terminal,
	// where progress is drawn as bars rather than logged.
	stderr io.Writer
	tty    bool
	getenv func(string) string
	// barDelay is how long work runs before a bar is drawn; zero means
	// progressDelay (tests draw at once with a negative delay).
	barDelay time.Duration
	// progress, when set by a command before it opens the store, is told
	// the steps of opening it and of the command's writes; openRouter
	// makes one of its own otherwise.
	progress *progress
	// logger is built from logLevel before any command runs.
	logger *slog.Logger
	// started is set once flags and arguments have been accepted: an error
	// before that is a usage error.
	started bool
}

// exitCodeError carries an exit code other than 1 for an error that is not
// a failure of the command itself (a CI gate that tripped).
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }
func (e *exitCodeError) Unwrap() error { return e.err }

// usageError is a bad flag value or argument: exit code 2. msg, when set,
// is what the user reads, in the words of the flag they typed, in place of
// err's text; err still unwraps (to ErrInvalid, say).
type usageError struct {
	err error
	msg string
}

func (e *usageError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.err.Error()
}
func (e *usageError) Unwrap() error { return e.err }

// checkQuery refuses a request select, fill and run cannot route alike
// locally and with --remote: empty, or not UTF-8 text, which gRPC's
// strings cannot carry ("grpc: error while marshaling: string field
// contains invalid UTF-8").
func checkQuery(cmd, q string) error {
	switch {
	case strings.TrimSpace(q) == "":
		return usagef("%s: the query is empty", cmd)
	case !utf8.ValidString(q):
		return usagef("%s: the query is not UTF-8 text", cmd)
	}
	return nil
}

func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// execute runs the command line args and returns the exit code. It is the
// one place that prints a command's error and picks the code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	g := &globalOptions{stderr: stderr, getenv: getenv, tty: isTerminal(stderr)}
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	code := exitError
	var ue *usageError
	var ce *exitCodeError
	switch {
	case errors.As(err, &ce):
		code = ce.code
	case errors.As(err, &ue), !g.started:
		code = exitUsage
	case ctx.Err() != nil:
		err = fmt.Errorf("interrupted: %w", err)
	}
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(stderr, "habilis: %v\n", withHint(cmd, err))
	if code == exitUsage {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// withHint adds to a damaged store's error what the user can do about it.
func withHint(cmd *cobra.Command, err error) error {
	if !errors.Is(err, habilis.ErrDamaged) {
		return err
	}
	hint := damagedHint
	if cmd.CommandPath() != "habilis store check" {
		hint += checkHint
	}
	return fmt.Errorf("%w; %s", err, hint)
}

func newRootCmd(g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "habilis",
		Short: "Route requests to the right tool",
		Long: `habilis decides which tool of a catalog should handle a request, or that none should.

Exit codes: 0 success, 1 error, 2 usage error, 3 collisions --fail-on found a
collision at or above the severity, 4 eval --min-acc found top-1 accuracy below
the minimum.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			level, err := parseLevel(g.logLevel)
			if err != nil {
				return err
			}
			g.logger = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
			g.started = true
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err, msg: flagMessage(err)} })
	g.addFlags(root)
	root.AddCommand(
		newLoadCmd(g),
		newToolsCmd(g),
		newSelectCmd(g),
		newFillCmd(g),
		newRunCmd(g),
		newCollisionsCmd(g),
		newMapCmd(g),
		newEvalCmd(g),
		newFitCmd(g),
		newMigrateCmd(g),
		newStoreCmd(g),
		newServeCmd(g),
		newProxyCmd(g),
		newMCPCmd(g),
		newVersionCmd(g),
	)
	return root
}

// addFlags registers the global flags; environment variables give their
// defaults.
func (g *globalOptions) addFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&g.store, "store", envOr(g.getenv, "HABILIS_STORE", defaultStore),
		"catalog store: a bbolt file or qdrant://HOST:PORT/CATALOG (env HABILIS_STORE)")
	f.StringVar(&g.embedder, "embedder", envOr(g.getenv, "HABILIS_EMBEDDER", "lexical"),
		"embedder: lexical, ollama:MODEL[@HOST] or openai:MODEL[@BASEURL] (env HABILIS_EMBEDDER)")
	f.StringVar(&g.apiKeyFile, "api-key-file", "", "file holding the openai embedder's API key (default: env OPENAI_API_KEY)")
	f.BoolVar(&g.reindex, "reindex", false, "re-embed a store built by another embedder instead of refusing it")
	f.BoolVar(&g.noEmbedCache, "no-embed-cache", false, "do not keep a model embedder's vectors on disk (default dir: env HABILIS_EMBED_CACHE, else the user's cache dir)")
	f.StringVar(&g.remote, "remote", "", "address of a habilis server to query instead of the local store")
	f.BoolVar(&g.json, "json", false, "print results as JSON")
	f.StringVar(&g.logLevel, "log-level", "warn", "log level: debug, info, warn or error")
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, usagef("--log-level %q: want debug, info, warn or error", s)
}

// flagMessage says what is wrong with a flag's value in the flag's own
// terms ("-k \"x\": want an integer"), where pflag's message names Go's
// parser ("invalid argument \"x\" for \"-k, --k\" flag: strconv.ParseInt:
// parsing \"x\": invalid syntax"); "" for other flag errors, whose
// messages read well.
func flagMessage(err error) string {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return ""
	}
	f := ive.GetFlag()
	name := "--" + f.Name
	if len(f.Name) == 1 {
		name = "-" + f.Name
	}
	want := map[string]string{
		"int": "an integer", "int64": "an integer", "uint": "a whole number", "uint32": "a whole number",
		"float32": "a number", "float64": "a number", "bool": "true or false", "duration": "a duration such as 500ms, 30s or 2m",
	}[f.Value.Type()]
	if want == "" {
		return ""
	}
	return fmt.Sprintf("%s %q: want %s", name, ive.GetValue(), want)
}

// checkKFlag refuses a -k outside 1 to selector.MaxK, the limit a server
// (api.MaxK) holds to as well.
func checkKFlag(k int) error {
	if k < 1 || k > selector.MaxK {
		return usagef("-k %d: want 1 to %d", k, selector.MaxK)
	}
	return nil
}

// modeFlag reads --mode.
func modeFlag(s string) (habilis.Mode, error) {
	m, err := habilis.ParseMode(s)
	if err != nil {
		return "", &usageError{err: err, msg: fmt.Sprintf("--mode %q: want description, centroid or hybrid", s)}
	}
	return m, nil
}

// noRemote refuses --remote for commands that only work on a local store.
func (g *globalOptions) noRemote(cmd string) error {
	if g.remote != "" {
		return usagef("%s does not support --remote: it works on a local store", cmd)
	}
	return nil
}

// allowedKinds reads --allow: the executor kinds run and serve may run,
// none when the flag is not given.
func allowedKinds(flags []string) ([]string, error) {
	var kinds []string
	for _, k := range flags {
		k = strings.ToLower(strings.TrimSpace(k))
		switch k {
		case executor.KindHTTP, executor.KindCommand, executor.KindMCP:
		default:
			return nil, usagef("--allow %q: want http, command or mcp", k)
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// lookupEnv resolves the variables an executor spec names (run, serve's
// Invoke). Only those names are ever asked for; an empty variable counts as
// unset.
func (g *globalOptions) lookupEnv(name string) (string, bool) {
	v := g.getenv(name)
	return v, v != ""
}
