package claudetest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Fake modes, selected by the FakeMode environment variable of a fake
// claude process.
const (
	// FakeResult prints init, one assistant message and a result, then
	// exits with FakeExit (default 0).
	FakeResult = "result"
	// FakeHangAfterResult prints a result and never exits.
	FakeHangAfterResult = "hang-after-result"
	// FakeCrash prints init and half a line, then exits with FakeExit
	// (default 3).
	FakeCrash = "crash"
	// FakeGarbage prints lines that are not JSON and exits 0.
	FakeGarbage = "garbage"
	// FakeForever prints init and never exits.
	FakeForever = "forever"
	// fakeSleep is the child mode: do nothing, forever.
	fakeSleep = "sleep"
)

// Environment variables that drive a fake claude process. Pass them with
// claude.Invocation.Env.
const (
	// FakeMode selects the behaviour (FakeResult, ...).
	FakeMode = "CLAUDETEST_FAKE"
	// FakeExit is the exit code of FakeResult and FakeCrash.
	FakeExit = "CLAUDETEST_FAKE_EXIT"
	// FakeSubtype is the result subtype (default "success").
	FakeSubtype = "CLAUDETEST_FAKE_SUBTYPE"
	// FakeSession is the session id to report (default random).
	FakeSession = "CLAUDETEST_FAKE_SESSION"
	// FakeRecord names a file that receives a JSON FakeRecordData.
	FakeRecord = "CLAUDETEST_FAKE_RECORD"
	// FakeChild, when "1", makes the fake start a child process in its
	// process group first (to test that the group dies).
	FakeChild = "CLAUDETEST_FAKE_CHILD"
	// FakeIgnoreTerm, when "1", makes the fake ignore SIGTERM.
	FakeIgnoreTerm = "CLAUDETEST_FAKE_IGNORE_TERM"
	// FakePIDFile names a file that receives the fake's pid (which is its
	// process group id) once it is set up.
	FakePIDFile = "CLAUDETEST_FAKE_PIDFILE"
)

// FakeRecordData is what a fake records about how it was started.
type FakeRecordData struct {
	Args  []string `json:"args"`
	Env   []string `json:"env"`
	Dir   string   `json:"dir"`
	Stdin string   `json:"stdin"`
}

// MaybeRunFake turns the current process into a fake claude when FakeMode
// is set, and exits. Call it first in TestMain so the test binary itself
// can serve as CLAUDE_BIN:
//
//	func TestMain(m *testing.M) { claudetest.MaybeRunFake(); os.Exit(m.Run()) }
func MaybeRunFake() {
	if os.Getenv(FakeMode) != "" {
		os.Exit(FakeMain())
	}
}

// FakeMain runs the fake selected by the environment and returns the exit
// code. It is the whole program of claudetest/fakeclaude.
func FakeMain() int {
	mode := os.Getenv(FakeMode)
	if mode == fakeSleep {
		forever()
	}
	if os.Getenv(FakeIgnoreTerm) == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	stdin, _ := io.ReadAll(os.Stdin)
	if p := os.Getenv(FakeRecord); p != "" {
		dir, _ := os.Getwd()
		rec := FakeRecordData{Args: os.Args[1:], Env: os.Environ(), Dir: dir, Stdin: string(stdin)}
		b, _ := json.Marshal(rec)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "fake claude:", err)
			return 70
		}
	}
	if os.Getenv(FakeChild) == "1" {
		self, err := os.Executable()
		if err == nil {
			child := exec.Command(self)
			child.Env = append(os.Environ(), FakeMode+"="+fakeSleep)
			err = child.Start()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake claude: start child:", err)
			return 70
		}
	}
	if p := os.Getenv(FakePIDFile); p != "" {
		if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "fake claude:", err)
			return 70
		}
	}
	sid := os.Getenv(FakeSession)
	if sid == "" {
		sid = newUUID()
	}
	exit := func(def int) int {
		if n, err := strconv.Atoi(os.Getenv(FakeExit)); err == nil {
			return n
		}
		return def
	}
	switch mode {
	case FakeResult:
		emitInit(sid)
		emit(map[string]any{"type": "assistant", "session_id": sid, "message": map[string]any{
			"content": []any{map[string]any{"type": "text", "text": `quoting {"type":"result"} is harmless`}},
		}})
		emitResult(sid)
		return exit(0)
	case FakeHangAfterResult:
		emitInit(sid)
		emitResult(sid)
		forever()
	case FakeCrash:
		emitInit(sid)
		fmt.Print(`{"type":"assistant","mess`)
		fmt.Fprintln(os.Stderr, "fake claude: simulated crash")
		return exit(3)
	case FakeGarbage:
		fmt.Println("this is not json")
		fmt.Println("{ neither is this")
		return 0
	case FakeForever:
		emitInit(sid)
		forever()
	}
	fmt.Fprintf(os.Stderr, "fake claude: unknown mode %q\n", mode)
	return 64
}

func forever() {
	for {
		time.Sleep(time.Hour)
	}
}

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func emitInit(sid string) {
	emit(map[string]any{"type": "system", "subtype": "init", "session_id": sid, "model": "fake"})
}

func emitResult(sid string) {
	subtype := os.Getenv(FakeSubtype)
	if subtype == "" {
		subtype = "success"
	}
	emit(map[string]any{
		"type": "result", "subtype": subtype, "is_error": !strings.HasPrefix(subtype, "success"),
		"session_id": sid, "result": "fake result", "num_turns": 2, "duration_ms": 1234,
		"total_cost_usd": 0.0125,
		"usage":          map[string]any{"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 7},
	})
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
