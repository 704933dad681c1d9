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

// pageRoutes registers the pages, the assets and the favicon.
func (s *Server) pageRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /{$}", s.page("tasks", "Tasks"))
	m.HandleFunc("GET /tasks/{id}", s.page("task", "Task"))
	m.HandleFunc("GET /memory", s.page("memory", "Memory"))
	m.HandleFunc("GET /friction", s.page("friction", "Friction"))
	m.HandleFunc("GET /login", s.loginPage)
	m.HandleFunc("POST /login", s.login)
	m.HandleFunc("POST /logout", s.logout)
	m.Handle("GET /assets/", assetHandler())
	m.HandleFunc("GET /favicon.ico", favicon)
}

// favicon answers /favicon.ico, which browsers ask for whatever the page
// links, with the panel's icon.
func favicon(w http.ResponseWriter, r *http.Request) {
	data, err := assetFS.ReadFile("assets/favicon.svg")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "max-age=86400")
	_, _ = w.Write(data)
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
	// Serving is whether a daemon serves the workspace, as the page is
	// rendered: the live indicator's first word.
	Serving ServingView
	// Task is the task page's first paint, rendered here so that the
	// page shows the task before its script has run (nil elsewhere, or
	// for a task that cannot be read: the script says why).
	Task *firstPaint
}

func (s *Server) page(name, title string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := whoOf(r)
		d := pageData{Page: name, Title: title, CSRF: csrfToken(w, r, s.secure(r)), ReadOnly: s.cfg.ReadOnly,
			User: p.user, LoggedIn: s.cfg.Token != "", Serving: s.serving()}
		if name == "task" {
			d.Task = s.firstPaint(r.Context(), r.PathValue("id"))
			if d.Task != nil {
				d.Title = d.Task.ID
			}
		}
		s.render(w, "page.html", d)
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
