package web

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

// The pages are small HTML shells (html/template) that load their script
// from /assets/; the scripts fetch the API and build the DOM with
// textContent only, so nothing an agent wrote is ever parsed as HTML.

//go:embed assets
var assetFS embed.FS

//go:embed templates/*.html
var templateFS embed.FS

var pages = template.Must(template.ParseFS(templateFS, "templates/*.html"))

func assetHandler() http.Handler {
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(sub)
	return http.StripPrefix("/assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
}

// pageData is what every page template gets.
type pageData struct {
	Page     string // the script to load: /assets/<Page>.js
	Title    string
	CSRF     string
	ReadOnly bool
	Error    string
}

func (s *Server) page(name, title string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.render(w, "page.html", pageData{Page: name, Title: title, CSRF: csrfToken(w, r), ReadOnly: s.cfg.ReadOnly})
	}
}

func (s *Server) render(w http.ResponseWriter, tmpl string, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := pages.ExecuteTemplate(w, tmpl, d); err != nil {
		s.log.Warn("web: render a page", "page", d.Page, "err", err)
	}
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, "login.html", pageData{Title: "Log in"})
}

// login checks the token a person typed and sets it as a cookie that
// scripts cannot read and other sites do not send.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil || !s.tokenIs(r.PostForm.Get("token")) {
		w.WriteHeader(http.StatusUnauthorized)
		s.render(w, "login.html", pageData{Title: "Log in", Error: "That is not the token."})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: s.cfg.Token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int((30 * 24 * time.Hour).Seconds())})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
