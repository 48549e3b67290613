package daemon

import (
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCheckHTTPSettings(t *testing.T) {
	tests := []struct {
		name    string
		timeout string
		token   string
		want    time.Duration
		wantErr string
	}{
		{name: "default", timeout: "30s", want: 30 * time.Second},
		{name: "seconds", timeout: "5", want: 5 * time.Second},
		{name: "bad timeout", timeout: "soon", wantErr: "DISINTO_HTTP_READ_TIMEOUT"},
		{name: "zero timeout", timeout: "0s", wantErr: "DISINTO_HTTP_READ_TIMEOUT"},
		{name: "short token", timeout: "30s", token: "short-token", wantErr: "DISINTO_STATUS_TOKEN is shorter"},
		{name: "token", timeout: "30s", token: "0123456789abcdef", want: 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs, err := checkHTTPSettings(HTTP{ReadTimeout: tt.timeout}, tt.token)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %v, want one line with %q", err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("error %v", err)
			case hs.readTimeout != tt.want || hs.statusToken != tt.token:
				t.Errorf("got %+v", hs)
			}
		})
	}
}

func TestOpenListeners(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		token   string
		wantErr bool
	}{
		{name: "loopback", status: "127.0.0.1:0"},
		{name: "IPv6 loopback", status: "[::1]:0"},
		{name: "every interface without a token", status: ":0", wantErr: true},
		{name: "0.0.0.0 without a token", status: "0.0.0.0:0", wantErr: true},
		{name: "every interface with a token", status: ":0", token: "0123456789abcdef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			free, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			hookAddr := free.Addr().String()
			_ = free.Close()
			hook, status, err := openListeners(HTTP{Listen: hookAddr, StatusListen: tt.status}, tt.token)
			if tt.name == "IPv6 loopback" && err != nil && strings.Contains(err.Error(), "assign") {
				t.Skip("no IPv6 loopback on this machine")
			}
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "DISINTO_STATUS_TOKEN") {
					t.Fatalf("error %v, want one naming DISINTO_STATUS_TOKEN", err)
				}
				// The hook listener was closed too.
				ln, err := net.Listen("tcp", hookAddr)
				if err != nil {
					t.Fatalf("hook listener left open: %v", err)
				}
				_ = ln.Close()
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, _ = hook.Close(), status.Close()
		})
	}
}

func TestRequireBearer(t *testing.T) {
	const token = "0123456789abcdef-token"
	h := requireBearer(token, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	tests := []struct {
		path, auth string
		want       int
	}{
		{"/status", "", http.StatusUnauthorized},
		{"/status", "Bearer wrong", http.StatusUnauthorized},
		{"/status", "Bearer " + token[:len(token)-1], http.StatusUnauthorized},
		{"/status", "Bearer " + token + "x", http.StatusUnauthorized},
		{"/status", "Basic " + token, http.StatusUnauthorized},
		{"/status", token, http.StatusUnauthorized},
		{"/metrics", "Bearer " + token, http.StatusOK},
		{"/status", "bearer " + token, http.StatusOK},
		{"/", "", http.StatusUnauthorized},
		{"/", "Basic " + basic("operator", token), http.StatusOK},
		{"/status", "Basic " + basic("", token), http.StatusOK},
		{"/", "Basic " + basic(token, ""), http.StatusUnauthorized},
		{"/", "Basic " + basic("operator", "wrong"), http.StatusUnauthorized},
		{"/healthz", "", http.StatusOK},
	}
	for _, tt := range tests {
		req := httptest.NewRequest("GET", tt.path, nil)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != tt.want {
			t.Errorf("GET %s with %q: %d, want %d", tt.path, tt.auth, w.Code, tt.want)
		}
		if w.Code == http.StatusUnauthorized && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("GET %s: a 401 that does not ask a browser for the token: %q", tt.path, w.Header().Values("WWW-Authenticate"))
		}
	}
	open := requireBearer("", http.NotFoundHandler())
	w := httptest.NewRecorder()
	open.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("without a token: %d, want the handler's 404", w.Code)
	}
}

func TestNewHTTPServerTimeouts(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), 2*time.Second)
	if srv.ReadTimeout != 2*time.Second || srv.ReadHeaderTimeout != 2*time.Second ||
		srv.WriteTimeout <= srv.ReadTimeout || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("timeouts: read %s, header %s, write %s, idle %s, header bytes %d",
			srv.ReadTimeout, srv.ReadHeaderTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
}

// basic is the credentials part of a basic authorization header.
func basic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}
