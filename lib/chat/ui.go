package chat

import (
	_ "embed"
	"html/template"
	"net/http"
)

// The chat's one page: the user's conversations, the current one and a
// message box. It talks to the endpoints with fetch, sends the CSRF token
// in a header, and shows every text as text, never as markup.

//go:embed index.html
var indexHTML string

var indexPage = template.Must(template.New("index").Parse(indexHTML))

// index serves the page with the session's user and CSRF token.
func (s *Server) index(w http.ResponseWriter, _ *http.Request, sess session) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	data := struct{ User, CSRF string }{sess.User, s.csrfToken(sess)}
	if err := indexPage.Execute(w, data); err != nil {
		s.o.Log.Error().Err(err).Msg("render the chat page")
	}
}
