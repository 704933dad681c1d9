package guard

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// origins is the Origin check: net/http's CrossOriginProtection (the
// browser's Sec-Fetch-Site, else an Origin naming the request's Host),
// with the trusted origins added. A request with neither header — not a
// browser's, or a browser's of the same origin — passes.
type origins struct {
	cop *http.CrossOriginProtection
}

func newOrigins(trusted []string) (*origins, error) {
	cop := http.NewCrossOriginProtection()
	for _, o := range trusted {
		if err := cop.AddTrustedOrigin(strings.TrimSuffix(o, "/")); err != nil {
			return nil, fmt.Errorf("trusted origin: %w (write it as a browser sends it: https://host[:port])", err)
		}
	}
	return &origins{cop: cop}, nil
}

// checkOrigin refuses a request from another origin: any on a path of
// AllMethods, else one that would change something (CrossOriginProtection
// lets GET, HEAD and OPTIONS through: a link followed from elsewhere
// opens a page).
func (g *Guard) checkOrigin(r *http.Request) *Refusal {
	q := r
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		if !g.allMethods(r.URL.Path) {
			return nil
		}
		q = r.WithContext(r.Context())
		q.Method = http.MethodPost // checked as any other request
	}
	if err := g.origins.cop.Check(q); err != nil {
		from := r.Header.Get("Origin")
		if from == "" {
			from = "another site (Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site") + ")"
		}
		return &Refusal{Status: http.StatusForbidden, Limit: LimitOrigin,
			Msg:  fmt.Sprintf("a request from %s to %s: only pages of this origin may call it", from, r.Host),
			Hint: "call it from a page of this server, or from a program (which sends no Origin); behind a proxy keep the Host header, or list the origin among the trusted ones (--trust-origin)"}
	}
	return nil
}

func (g *Guard) allMethods(path string) bool {
	for _, p := range g.opt.AllMethods {
		if path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// proxies are the reverse proxies whose X-Forwarded-For is believed.
type proxies struct {
	nets []netip.Prefix
}

func newProxies(list []string) (*proxies, error) {
	p := &proxies{}
	for _, s := range list {
		if pre, err := netip.ParsePrefix(s); err == nil {
			p.nets = append(p.nets, pre.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: neither an address nor a CIDR prefix", s)
		}
		p.nets = append(p.nets, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return p, nil
}

func (p *proxies) trusted(a netip.Addr) bool {
	for _, n := range p.nets {
		if n.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// client is the client address a request is counted under: its remote
// address or, from a trusted proxy, the last address of X-Forwarded-For
// that is not a trusted proxy. An IPv6 address counts as its /64, which
// one host commonly holds whole.
func (p *proxies) client(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if p.trusted(a) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			h, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break
			}
			a = h.Unmap()
			if !p.trusted(a) {
				break
			}
		}
	}
	if a.Is6() {
		pre, _ := a.Prefix(64)
		return pre.String()
	}
	return a.String()
}
