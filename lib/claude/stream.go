package claude

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/text"
)

// event is the subset of a stream-json line the runner reads. Unknown
// fields and unknown types are ignored.
type event struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	Message   *struct {
		Content []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	} `json:"message"`

	// Fields of the result event.
	Result       string   `json:"result"`
	IsError      bool     `json:"is_error"`
	NumTurns     int      `json:"num_turns"`
	DurationMS   int64    `json:"duration_ms"`
	TotalCostUSD float64  `json:"total_cost_usd"`
	CostUSD      float64  `json:"cost_usd"` // older CLIs
	Usage        Usage    `json:"usage"`
	Errors       []string `json:"errors"`
	// APIErrorStatus is the model API's HTTP status when the run ended on
	// an API error the CLI gave up retrying.
	APIErrorStatus int `json:"api_error_status"`
}

// maxLine bounds one stream-json line kept in memory; tool results can be
// large, anything longer is passed to the transcript but not decoded.
const maxLine = 64 << 20

// streamParser consumes the CLI's stdout as an io.Writer, splits it into
// lines, copies them to the transcript and decodes them. It signals the
// first result event on resultSeen.
type streamParser struct {
	mu         sync.Mutex
	buf        []byte
	transcript io.Writer // may be nil
	log        zerolog.Logger

	initID     string
	res        *event
	lines      int
	garbage    int
	lastBad    string
	resultSeen chan struct{}
	// onLine, if set, hears of every line with its event type ("" for
	// output that is not an event): the session's heartbeat.
	onLine func(kind string)
}

func newStreamParser(transcript io.Writer, log zerolog.Logger) *streamParser {
	return &streamParser{transcript: transcript, log: log, resultSeen: make(chan struct{})}
}

// heard passes one line's event type to onLine.
func (p *streamParser) heard(kind string) {
	if p.onLine != nil {
		p.onLine(kind)
	}
}

// Write implements io.Writer; it never fails so that the CLI never sees a
// broken pipe because of a bad line.
func (p *streamParser) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		p.line(p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	if len(p.buf) > maxLine {
		p.line(p.buf)
		p.buf = nil
	}
	return len(b), nil
}

// flush handles a last line without a trailing newline.
func (p *streamParser) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		p.line(p.buf)
		p.buf = nil
	}
}

func (p *streamParser) line(raw []byte) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	if p.transcript != nil {
		// Transcript failures must not stop the run; the error surfaces
		// when the transcript is closed.
		_, _ = p.transcript.Write(append(append([]byte{}, raw...), '\n'))
	}
	p.lines++
	var ev event
	if len(raw) > maxLine || raw[0] != '{' || json.Unmarshal(raw, &ev) != nil {
		p.garbage++
		p.lastBad = text.Clip(string(raw), 200)
		p.heard("")
		return
	}
	p.heard(ev.Type)
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" && ev.SessionID != "" {
			p.initID = ev.SessionID
			p.log.Debug().Str("session", ev.SessionID).Str("model", ev.Model).Msg("claude session started")
		}
	case "assistant":
		if ev.Message == nil {
			return
		}
		for _, c := range ev.Message.Content {
			switch c.Type {
			case "text":
				p.log.Debug().Str("text", text.Clip(c.Text, 500)).Msg("claude says")
			case "tool_use":
				p.log.Debug().Str("tool", c.Name).Str("input", text.Clip(string(c.Input), 500)).Msg("claude tool use")
			}
		}
	case "result":
		if p.res != nil {
			return // keep the first result; later ones are not expected
		}
		r := ev
		p.res = &r
		close(p.resultSeen)
	}
}

// result fills in what was parsed.
func (p *streamParser) result(res *Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	res.SessionID = p.initID
	if p.res == nil {
		return
	}
	ev := p.res
	res.HasResult = true
	if ev.SessionID != "" {
		res.SessionID = ev.SessionID
	}
	res.Text = ev.Result
	res.IsError = ev.IsError
	res.Subtype = ev.Subtype
	res.Errors = ev.Errors
	res.APIErrorStatus = ev.APIErrorStatus
	res.CostUSD = ev.TotalCostUSD
	if res.CostUSD == 0 {
		res.CostUSD = ev.CostUSD
	}
	res.Usage = ev.Usage
	res.NumTurns = ev.NumTurns
	res.Duration = time.Duration(ev.DurationMS) * time.Millisecond
}

// badOutput describes undecodable output for error messages.
func (p *streamParser) badOutput() (lines, garbage int, last string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lines, p.garbage, p.lastBad
}
