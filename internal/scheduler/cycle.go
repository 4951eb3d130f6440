package scheduler

// CycleState is one request's scratch space, kube-scheduler's CycleState in small: the
// pre-steps write what they computed once over all nodes (group counts per domain, compiled
// expressions), and Filter and Score read it per node. A state lives for one request in one
// pass over the nodes and is never shared between goroutines.
type CycleState struct {
	data  map[string]any
	nodes []*NodeInfo
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{data: map[string]any{}}
}

// NewCycleStateOver returns an empty state for a request evaluated over nodes, which Nodes
// returns.
func NewCycleStateOver(nodes []*NodeInfo) *CycleState {
	s := NewCycleState()
	s.nodes = nodes
	return s
}

// Read returns what a plugin wrote under key.
func (s *CycleState) Read(key string) (any, bool) {
	v, ok := s.data[key]
	return v, ok
}

// Write stores v under key; plugins use their own name as the key.
func (s *CycleState) Write(key string, v any) {
	s.data[key] = v
}

// Nodes is every node of the view the request is evaluated on, feasible or not (nil outside
// the pipeline): a pre-score step counts guests on nodes that cannot take the request too, as
// kube's plugins do through their snapshot lister.
func (s *CycleState) Nodes() []*NodeInfo {
	return s.nodes
}
