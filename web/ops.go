package web

// StreamClients is how many live streams (server-sent events) are open,
// for metrics. Safe for concurrent use.
func (s *Server) StreamClients() int { return s.hub.count() }
