// Package plugins holds the scheduler's filter, score and vmid plugins, one file each. To add
// a plugin, write its file and add one line to Registry.
package plugins

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// Registry lists every plugin in the order the pipeline runs them. Range comes before Regex,
// so Range wins when both annotations are set.
var Registry = scheduler.Registry{
	Filters: []scheduler.PluginSpec{
		{Name: NodeNameName, New: newNodeName},
		{Name: NodeOnlineName, New: newNodeOnline},
		{Name: NodeRegexName, New: newNodeRegex, Annotations: []scheduler.AnnotationSpec{
			{Key: scheduler.AnnotationNodeRegex, Description: "a regular expression the whole node name must match"}}},
		{Name: NodeSelectorName, New: newNodeSelector},
		{Name: TaintTolerationName, New: newTaintFilter},
		{Name: CPUOvercommitName, Args: []string{"ratio"}, New: newCPUOvercommit},
		{Name: MemoryOvercommitName, Args: []string{"ratio"}, New: newMemoryOvercommit},
		{Name: StorageCapacityName, New: newStorageCapacity},
		{Name: VMAffinityName, Args: []string{ProxLBTagsArg}, New: newVMAffinityFilter},
		{Name: TopologySpreadName, New: newTopologySpreadFilter},
	},
	Scores: []scheduler.PluginSpec{
		{Name: NodeResourceName, New: newNodeResource},
		{Name: NodeAffinityName, New: newNodeAffinity},
		{Name: TaintTolerationName, New: newTaintScore},
		{Name: VMAffinityName, Args: []string{ProxLBTagsArg}, New: newVMAffinityScore},
		{Name: TopologySpreadName, New: newTopologySpreadScore},
		{Name: LeastAllocatedName, Args: allocationArgs, DefaultOff: true, New: newLeastAllocated},
		{Name: MostAllocatedName, Args: allocationArgs, DefaultOff: true, New: newMostAllocated},
		{Name: BalancedAllocationName, DefaultOff: true, New: newBalancedAllocation},
	},
	VMIDs: []scheduler.PluginSpec{
		{Name: RangeName, New: newRange, Annotations: []scheduler.AnnotationSpec{
			{Key: scheduler.AnnotationVMIDRange, Description: "`START-END`, the inclusive range the VMID is taken from (lowest free first)"}}},
		{Name: RegexName, New: newRegex, Annotations: []scheduler.AnnotationSpec{
			{Key: scheduler.AnnotationVMIDRegex, Description: "a regular expression the whole VMID must match (lowest free first)"}}},
	},
}

// NewProfile builds a pipeline from the registry and a merged plugin config.
func NewProfile(cfg scheduler.PluginConfig) (*scheduler.Profile, error) {
	return scheduler.NewProfile(Registry, cfg)
}

// CheckAnnotation checks one scheduler annotation as a request's validation would: the key is
// one a registered plugin reads, and the value is one it accepts.
func CheckAnnotation(key, value string) error {
	var keys []string
	for _, a := range Registry.AnnotationKeys() {
		keys = append(keys, a.Key)
	}
	if !slices.Contains(keys, key) {
		return fmt.Errorf("unknown annotation %q; valid keys: %s", key, strings.Join(keys, ", "))
	}
	prof, err := NewProfile(scheduler.PluginConfig{})
	if err == nil {
		err = prof.ValidateRequest(&scheduler.Request{Cores: 1, Sockets: 1, MemoryMiB: 1, Annotations: map[string]string{key: value}})
	}
	var ie *scheduler.InputError
	if errors.As(err, &ie) {
		return fmt.Errorf("%s: %s", key, ie.Message)
	}
	return err
}
