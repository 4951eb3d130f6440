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
// and an invalid regex is an error.
type nodeRegex struct {
	// cache holds compiled expressions: a decision filters every node with the same one.
	cache sync.Map
}

func newNodeRegex(map[string]string) (scheduler.Plugin, error) { return &nodeRegex{}, nil }

func (*nodeRegex) Name() string { return NodeRegexName }

func (*nodeRegex) ValidateRequest(req scheduler.Request) error {
	value, ok := req.Annotations[scheduler.AnnotationNodeRegex]
	if !ok {
		return nil
	}
	_, err := compileWhole(value)
	if err != nil {
		return &scheduler.InputError{Attribute: "annotations", Key: scheduler.AnnotationNodeRegex, Message: err.Error()}
	}
	return nil
}

func (f *nodeRegex) Filter(req scheduler.Request, n *scheduler.NodeInfo) *scheduler.Rejection {
	value, ok := req.Annotations[scheduler.AnnotationNodeRegex]
	if !ok {
		return nil
	}
	re, err := f.compile(value)
	if err != nil || re.MatchString(n.Node.Name) {
		return nil // invalid regexes are refused by ValidateRequest before any filtering
	}
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

func (f *nodeRegex) compile(expr string) (*regexp.Regexp, error) {
	if re, ok := f.cache.Load(expr); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := compileWhole(expr)
	if err != nil {
		return nil, err
	}
	f.cache.Store(expr, re)
	return re, nil
}
