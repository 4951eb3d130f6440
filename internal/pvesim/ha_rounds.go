package pvesim

// The HA manager read from Go, for tests that play its rounds without the API (RunHARounds):
// each GET the simulator answers runs one round (ServeHTTP), which a test reading the state
// through the API would run as a side effect.

// HAService is a service as the CRM's manager status lists it: its node and CRM state
// (started, stopped, request_stop, migrate, relocate, recovery, error).
type HAService struct {
	Node  string
	State string
}

// HAServices are the services the CRM knows, by sid, as manager_status's service_status shows
// them; a resource not picked up yet, ignored or removed is missing.
func (s *Server) HAServices() map[string]HAService {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]HAService{}
	for _, res := range s.sortedHAResources() {
		if state := s.crmState(res); state != "" {
			out[res.sid] = HAService{Node: s.crmNode(res), State: state}
		}
	}
	return out
}
