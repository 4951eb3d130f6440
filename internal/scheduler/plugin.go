package scheduler

// Plugin is anything the pipeline runs. Name is the key used in plugin config.
type Plugin interface {
	Name() string
}

// FilterPlugin decides whether a node may take the request.
type FilterPlugin interface {
	Plugin
	// Filter returns nil when the node passes, or why it does not.
	Filter(req Request, node *NodeInfo) *Rejection
}

// Rejection explains a failed filter: Reason is per node with numbers
// ("CPUOvercommit: (30+4)/8 = 4.25 > 4"); Group is the phrase used when counting nodes in an
// unschedulable error ("exceeded cpu overcommit ratio 4").
type Rejection struct {
	Reason string
	Group  string
}

// ScorePlugin rates a feasible node from 0 (worst) to 100 (best).
type ScorePlugin interface {
	Plugin
	Score(req Request, node *NodeInfo) float64
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
	ValidateRequest(req Request) error
}

// PluginSpec registers one plugin: its name, the args it accepts, and how to build it.
type PluginSpec struct {
	Name string
	// Args lists the accepted argument names; anything else is an error.
	Args []string
	New  func(args map[string]string) (Plugin, error)
}

// Registry lists every plugin the provider knows, per kind, in the order they run.
type Registry struct {
	Filters []PluginSpec
	Scores  []PluginSpec
	VMIDs   []PluginSpec
}
