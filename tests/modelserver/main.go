// Command modelserver serves scripted Anthropic Messages API conversations
// (lib/claude/claudetest scenarios loaded from JSON files) for end-to-end
// and container tests that run the real claude CLI:
//
//	go run ./tests/modelserver -listen :8080 -scenarios tests/modelserver/testdata
//
// Point the CLI at it with ANTHROPIC_BASE_URL=http://HOST:8080 and any
// ANTHROPIC_API_KEY.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "modelserver:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	dir := flag.String("scenarios", "", "directory of scenario *.json files")
	flag.Parse()
	if *dir == "" {
		return errors.New("-scenarios is required")
	}
	scenarios, err := claudetest.LoadScenarios(*dir)
	if err != nil {
		return err
	}
	if len(scenarios) == 0 {
		return fmt.Errorf("no scenarios in %s", *dir)
	}
	srv, err := claudetest.NewServer(scenarios...)
	if err != nil {
		return err
	}
	logger := log.New(os.Stderr, "", log.LstdFlags)
	srv.Logf = logger.Printf

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Addr: *listen, Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	logger.Printf("serving %d scenarios on %s", len(scenarios), *listen)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(shutdown)
}
