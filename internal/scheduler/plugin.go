package scheduler

// Plugin is anything the pipeline runs. Name is the key used in plugin config.
type Plugin interface {
	Name() string
}

// FilterPlugin decides whether a node may take the request. The state is the request's own,
// written by the pre-steps; the node carries its guests, assumed guests included.
type FilterPlugin interface {
	Plugin
	// Filter returns nil when the node passes, or why it does not.
	Filter(state *CycleState, req *Request, node *NodeInfo) *Rejection
}

// PreFilterPlugin is an optional extension of a FilterPlugin: it runs once per request,
// before any Filter, over every node. It computes what Filter needs (group counts per domain,
// compiled expressions) into the state, or rejects the request outright by returning an
// error (an *UnschedulableError or *InputError reads best).
type PreFilterPlugin interface {
	PreFilter(state *CycleState, req *Request, nodes []*NodeInfo) error
}

// CapacityPlugin is an optional extension of a FilterPlugin whose verdict is a capacity: it
// passes a node exactly while the request's Demand is at most the node's Room, and every
// guest placed there takes its demand from the room. The joint search bounds with it: the
// VMs left to place cannot need more than the room of the nodes they may still use.
type CapacityPlugin interface {
	Room(n *NodeInfo) float64
	Demand(r *Request) float64
	// Amount writes a figure of Room and Demand in user words ("12 GiB of memory"), for a
	// refusal's cause.
	Amount(v float64) string
}

// Rejection explains a failed filter: Reason is per node with numbers
// ("CPUOvercommit: (30+4)/8 = 4.25 > 4"); Group is the phrase used when counting nodes in an
// unschedulable error ("exceeded cpu overcommit ratio 4").
type Rejection struct {
	Reason string
	Group  string
}

// ScorePlugin rates a feasible node. Without a ScoreNormalizer the score must be 0 (worst)
// to 100 (best); with one it may be any raw figure the normaliser maps to 0..100.
type ScorePlugin interface {
	Plugin
	Score(state *CycleState, req *Request, node *NodeInfo) float64
}

// PreScorePlugin is an optional extension of a ScorePlugin: it runs once per request over
// the feasible nodes, before any Score.
type PreScorePlugin interface {
	PreScore(state *CycleState, req *Request, feasible []*NodeInfo)
}

// ScoreNormalizer is an optional extension of a ScorePlugin: it rewrites the raw scores of
// every feasible node in place to 0..100, as kube-scheduler's NormalizeScore does.
type ScoreNormalizer interface {
	NormalizeScores(state *CycleState, req *Request, scores []NodeScore)
}

// NodeScore is one feasible node's score from one plugin.
type NodeScore struct {
	Node  string
	Score float64
}

// VMIDPlugin picks a VMID when its annotation key is present on the request.
type VMIDPlugin interface {
	Plugin
	// Key is the annotation that activates the plugin.
	Key() string
	// Describe names the rule for the explanation, e.g. "range 100-199".
	Describe(value string) string
	// SelectVMID returns the lowest free id the rule allows.
	SelectVMID(value string, used IDSet) (int, error)
}

// RequestValidator is implemented by plugins that can reject a request before any snapshot is
// read (plan time): malformed regexes, ranges and so on.
type RequestValidator interface {
	ValidateRequest(req *Request) error
}

// PluginSpec registers one plugin: its name, the args it accepts, the annotation keys it
// reads, and how to build it.
type PluginSpec struct {
	Name string
	// Args lists the accepted argument names; anything else is an error.
	Args []string
	// Annotations lists the request annotation keys the plugin owns, with a description for
	// the schema docs; the provider accepts exactly the keys of the registry.
	Annotations []AnnotationSpec
	// DefaultOff keeps the plugin disabled unless a config layer enables it (a strategy
	// score such as bin packing, which would change every default decision).
	DefaultOff bool
	New        func(args map[string]string) (Plugin, error)
}

// AnnotationSpec is one annotation key a plugin reads.
type AnnotationSpec struct {
	Key         string
	Description string
}

// Registry lists every plugin the provider knows, per kind, in the order they run.
type Registry struct {
	Filters []PluginSpec
	Scores  []PluginSpec
	VMIDs   []PluginSpec
}

// AnnotationKeys lists every annotation key a registered plugin owns, in registry order.
func (reg Registry) AnnotationKeys() []AnnotationSpec {
	var keys []AnnotationSpec
	for _, specs := range [][]PluginSpec{reg.Filters, reg.Scores, reg.VMIDs} {
		for _, s := range specs {
			keys = append(keys, s.Annotations...)
		}
	}
	return keys
}
