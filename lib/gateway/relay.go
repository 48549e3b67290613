package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
)

// maxResponseBody bounds a non-streamed response read whole to meter it.
const maxResponseBody = 64 << 20

// dropped are the request headers never relayed: the run's own key (the
// gateway adds the backend's credential), hop-by-hop headers, and what
// the gateway sets itself.
var dropped = map[string]bool{
	"X-Api-Key": true, "Authorization": true, "Cookie": true, "Proxy-Authorization": true,
	"Connection": true, "Keep-Alive": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Proxy-Connection": true, "Host": true, "Content-Length": true, "Accept-Encoding": true,
}

// relay forwards r to b with b's credential and copies the answer back,
// metering the messages endpoint's usage into l.
func (g *Gateway) relay(w http.ResponseWriter, r *http.Request, l *Lease, b *backend) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "reading the request: "+err.Error())
		return
	}
	if len(body) > maxRequestBody {
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", "the request is larger than the gateway relays")
		return
	}
	u := *b.base
	u.Path = strings.TrimSuffix(u.Path, "/") + r.URL.Path
	u.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "api_error", "building the request")
		return
	}
	for k, vs := range r.Header {
		if !dropped[http.CanonicalHeaderKey(k)] {
			out.Header[k] = vs
		}
	}
	used, err := g.authorize(out, b)
	if err != nil {
		g.obs.GatewayRequest(b.Name, "no_credential")
		g.log.Error().Str("backend", b.Name).Err(err).Msg("model gateway: no credential for the backend")
		writeError(w, http.StatusBadGateway, "api_error", "the model gateway has no usable credential for backend "+b.Name)
		return
	}
	resp, err := g.client.Do(out)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && b.login != nil {
		// The login expired early, or was revoked: refresh it once
		// (unless another gateway did) and send the request again.
		if tok, rerr := b.login.rejected(r.Context(), used); rerr != nil {
			g.log.Error().Str("backend", b.Name).Err(rerr).Msg("model gateway: the backend refused the login, and it could not be refreshed")
		} else if tok != used {
			_ = resp.Body.Close()
			again := out.Clone(r.Context())
			again.Body = io.NopCloser(bytes.NewReader(body))
			bearer(again, tok)
			resp, err = g.client.Do(again)
		}
	}
	if err != nil {
		g.obs.GatewayRequest(b.Name, "backend_error")
		if r.Context().Err() == nil {
			g.log.Warn().Str("backend", b.Name).Err(err).Msg("model gateway: backend unreachable")
		}
		writeError(w, http.StatusBadGateway, "api_error", "the model backend "+b.Name+" did not answer")
		return
	}
	defer resp.Body.Close()
	g.obs.GatewayRequest(b.Name, "relayed")
	for k, vs := range resp.Header {
		if !dropped[http.CanonicalHeaderKey(k)] {
			w.Header()[k] = vs
		}
	}
	meter := r.URL.Path == "/v1/messages" && resp.StatusCode/100 == 2
	if !meter {
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		w.WriteHeader(resp.StatusCode)
		u, model := relayEvents(w, resp.Body)
		g.price(&u, model)
		l.record(u)
		return
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(data)
	if err != nil {
		return
	}
	var msg struct {
		Model string `json:"model"`
		Usage Usage  `json:"usage"`
	}
	_ = json.Unmarshal(data, &msg)
	msg.Usage.Requests = 1
	g.price(&msg.Usage, msg.Model)
	l.record(msg.Usage)
}

// relayEvents copies a server-sent event stream to w as it comes,
// flushing after each event, and returns the usage it reported: the
// message_start event's counters, with the output (and any input the
// backend reports late) of the last message_delta, whose counters are
// cumulative.
func relayEvents(w http.ResponseWriter, body io.Reader) (Usage, string) {
	flusher, _ := w.(http.Flusher)
	u, model := Usage{Requests: 1}, ""
	rd := bufio.NewReaderSize(body, 64<<10)
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 {
			_, _ = w.Write(line)
			if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:")); ok {
				meterEvent(bytes.TrimSpace(data), &u, &model)
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 && flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			if flusher != nil {
				flusher.Flush()
			}
			return u, model
		}
	}
}

// event is the part of a streamed event the meter reads.
type event struct {
	Type    string `json:"type"`
	Message struct {
		Model string `json:"model"`
		Usage *Usage `json:"usage"`
	} `json:"message"`
	Usage *Usage `json:"usage"`
}

// meterEvent folds one event's usage into u.
func meterEvent(data []byte, u *Usage, model *string) {
	if !bytes.Contains(data, []byte(`"usage"`)) {
		return
	}
	var ev event
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	switch ev.Type {
	case "message_start":
		*model = ev.Message.Model
		if s := ev.Message.Usage; s != nil {
			u.InputTokens, u.OutputTokens, u.CacheRead, u.CacheCreation = s.InputTokens, s.OutputTokens, s.CacheRead, s.CacheCreation
		}
	case "message_delta":
		if d := ev.Usage; d != nil {
			u.OutputTokens = d.OutputTokens
			if d.InputTokens > 0 {
				u.InputTokens = d.InputTokens
			}
			if d.CacheRead > 0 {
				u.CacheRead = d.CacheRead
			}
			if d.CacheCreation > 0 {
				u.CacheCreation = d.CacheCreation
			}
		}
	}
}

// authorize adds b's credential to r; login is the login's access token
// it used, if any.
func (g *Gateway) authorize(r *http.Request, b *backend) (login string, err error) {
	switch {
	case b.APIKey != "":
		r.Header.Set("X-Api-Key", b.APIKey)
	case b.OAuthToken != "":
		bearer(r, b.OAuthToken)
	case b.login != nil:
		if login, err = b.login.accessToken(r.Context()); err != nil {
			return "", err
		}
		bearer(r, login)
	}
	return login, nil
}

// bearer authenticates r with a subscription's OAuth token.
func bearer(r *http.Request, token string) {
	r.Header.Set("Authorization", "Bearer "+token)
	for _, v := range r.Header.Values("Anthropic-Beta") {
		for _, f := range strings.Split(v, ",") {
			if strings.TrimSpace(f) == oauthBeta {
				return
			}
		}
	}
	r.Header.Add("Anthropic-Beta", oauthBeta)
}
