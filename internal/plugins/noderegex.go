package plugins

import (
	"fmt"
	"regexp"
	"sync"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// NodeRegexName is the config key of the node-name regex filter.
const NodeRegexName = "NodeRegex"

// nodeRegex keeps nodes whose whole name matches the node.qemu-scheduler/regex annotation.
// Unlike the reference (substring match, invalid regex silently ignored), the match is anchored
// and an invalid regex is an error. PreFilter hands the request's compiled expression to
// Filter; compiled expressions are kept for the profile's life, as the requests of one
// configuration (count = 100) share one.
type nodeRegex struct {
	cache sync.Map
}

var (
	_ scheduler.FilterPlugin     = (*nodeRegex)(nil)
	_ scheduler.PreFilterPlugin  = (*nodeRegex)(nil)
	_ scheduler.RequestValidator = (*nodeRegex)(nil)
)

func newNodeRegex(map[string]string) (scheduler.Plugin, error) { return &nodeRegex{}, nil }

func (*nodeRegex) Name() string { return NodeRegexName }

func (f *nodeRegex) ValidateRequest(req *scheduler.Request) error {
	_, err := f.requestRegex(req)
	return err
}

// requestRegex compiles the request's annotation; nil when it has none.
func (f *nodeRegex) requestRegex(req *scheduler.Request) (*regexp.Regexp, error) {
	value, ok := req.Annotations[scheduler.AnnotationNodeRegex]
	if !ok {
		return nil, nil
	}
	if re, ok := f.cache.Load(value); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := compileWhole(value)
	if err != nil {
		return nil, &scheduler.InputError{Attribute: "annotations", Key: scheduler.AnnotationNodeRegex, Message: err.Error()}
	}
	f.cache.Store(value, re)
	return re, nil
}

func (f *nodeRegex) PreFilter(state *scheduler.CycleState, req *scheduler.Request, _ []*scheduler.NodeInfo) error {
	re, err := f.requestRegex(req)
	if re != nil {
		state.Write(NodeRegexName, re)
	}
	return err
}

func (*nodeRegex) Filter(state *scheduler.CycleState, req *scheduler.Request, n *scheduler.NodeInfo) *scheduler.Rejection {
	v, ok := state.Read(NodeRegexName)
	if !ok {
		return nil
	}
	re := v.(*regexp.Regexp)
	if re.MatchString(n.Node.Name) {
		return nil
	}
	value := req.Annotations[scheduler.AnnotationNodeRegex]
	return &scheduler.Rejection{
		Reason: fmt.Sprintf("NodeRegex: %q does not match %q", n.Node.Name, value),
		Group:  fmt.Sprintf("didn't match node regex %q", value),
	}
}

// compileWhole compiles a regex that must match the whole string.
func compileWhole(expr string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(`^(?:` + expr + `)$`)
	if err != nil {
		if _, plainErr := regexp.Compile(expr); plainErr != nil {
			err = plainErr
		}
		return nil, fmt.Errorf("invalid regex %q: %v", expr, err)
	}
	return re, nil
}
