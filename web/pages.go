package web

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
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
	User     string // the person logged in (LocalUser without a login)
	LoggedIn bool   // the panel has a login, so a logout
}

func (s *Server) page(name, title string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := whoOf(r)
		s.render(w, "page.html", pageData{Page: name, Title: title, CSRF: csrfToken(w, r, s.secure(r)), ReadOnly: s.cfg.ReadOnly,
			User: p.user, LoggedIn: s.cfg.Token != ""})
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
