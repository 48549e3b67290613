// Package logx sets up zerolog for the daemon and the CLI: a human-readable
// console sink (what `docker compose logs` shows) and one JSON-lines file per
// agent under <data>/logs, rotated by size. Everything written by either sink
// passes through a redactor first.
//
// Loggers are values handed to constructors; nothing here is global.
package logx

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/disinto/disinto/lib/redact"
)

// Options configures a Set of loggers.
type Options struct {
	// Console receives human-readable lines; nil means os.Stdout.
	Console io.Writer
	// NoColor disables ANSI colours on the console.
	NoColor bool
	// JSONConsole writes JSON lines to the console instead of pretty text.
	JSONConsole bool
	// Dir holds <agent>.log files; empty disables file logging.
	Dir string
	// Debug lowers the minimum level of both sinks to Debug, whatever
	// Level says.
	Debug bool
	// Level is the minimum level of both sinks: debug, info (the
	// default, also for ""), warn or error. New refuses any other name.
	Level string
	// MaxSizeMB is the size at which a log file is rotated (default 20).
	MaxSizeMB int
	// MaxBackups is how many rotated files are kept per agent (default 5).
	MaxBackups int
	// Redactor masks secrets; nil still masks credential-shaped text.
	Redactor *redact.Redactor
}

// Set hands out loggers that share one console and one log directory.
// It is safe for concurrent use.
type Set struct {
	opts    Options
	min     zerolog.Level
	console io.Writer

	mu    sync.Mutex
	files map[string]*lumberjack.Logger
}

var agentName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// New returns a Set. It creates Dir when file logging is enabled.
func New(opts Options) (*Set, error) {
	min, err := ParseLevel(opts.Level)
	if err != nil {
		return nil, err
	}
	if opts.Debug {
		min = zerolog.DebugLevel
	}
	if opts.Console == nil {
		opts.Console = os.Stdout
	}
	if opts.MaxSizeMB <= 0 {
		opts.MaxSizeMB = 20
	}
	if opts.MaxBackups <= 0 {
		opts.MaxBackups = 5
	}
	if opts.Dir != "" {
		if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
			return nil, fmt.Errorf("create log dir %s: %w", opts.Dir, err)
		}
	}
	// The redactor sees the bytes as they are written: the console
	// writer unquotes JSON strings, so masking its input would miss a
	// secret that only its output spells out.
	console := opts.Redactor.Writer(opts.Console)
	if !opts.JSONConsole {
		noColor := opts.NoColor || !isTerminal(opts.Console)
		console = zerolog.ConsoleWriter{Out: console, NoColor: noColor, TimeFormat: TimeFormat}
	}
	return &Set{
		opts:    opts,
		min:     min,
		console: console,
		files:   make(map[string]*lumberjack.Logger),
	}, nil
}

// For returns the logger of one agent (or component such as "daemon"): it
// writes to the console and to <Dir>/<agent>.log, and carries the agent key.
func (s *Set) For(agent string) zerolog.Logger {
	writers := []io.Writer{s.console}
	if f := s.file(agent); f != nil {
		writers = append(writers, s.opts.Redactor.Writer(f))
	}
	return zerolog.New(zerolog.MultiLevelWriter(writers...)).
		Level(s.level()).
		With().Timestamp().Str(KeyAgent, agent).Logger()
}

func (s *Set) file(agent string) io.Writer {
	if s.opts.Dir == "" {
		return nil
	}
	if !agentName.MatchString(agent) {
		agent = "misc"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[agent]
	if !ok {
		f = &lumberjack.Logger{
			Filename:   filepath.Join(s.opts.Dir, agent+".log"),
			MaxSize:    s.opts.MaxSizeMB,
			MaxBackups: s.opts.MaxBackups,
		}
		s.files[agent] = f
	}
	return f
}

func (s *Set) level() zerolog.Level { return s.min }

// Close closes every log file. Loggers handed out keep working on the
// console; file writes after Close reopen the file.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// isTerminal reports whether w is a character device (a terminal), where
// colours help; `docker compose logs` and files get plain text.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Nop returns a logger that discards everything, for tests and callers that
// pass no logger.
func Nop() zerolog.Logger { return zerolog.Nop() }

// TimeFormat is how log lines carry their time, on the console, in the
// files and in `disinto logs`: RFC 3339 with milliseconds and the zone.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// The JSON files and the console carry milliseconds: zerolog's time format
// is process-wide, and every logger of the process is made here.
func init() { zerolog.TimeFieldFormat = TimeFormat }

// ParseLevel reads a level name: debug, info (also ""), warn or error.
func ParseLevel(s string) (zerolog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return zerolog.DebugLevel, nil
	case "", "info":
		return zerolog.InfoLevel, nil
	case "warn", "warning":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	}
	return zerolog.NoLevel, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
}

// ParseFormat reads a console format name: console (also "") or json. It
// reports whether the console gets JSON lines.
func ParseFormat(s string) (json bool, err error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "console", "text":
		return false, nil
	case "json":
		return true, nil
	}
	return false, fmt.Errorf("unknown log format %q (want console or json)", s)
}
