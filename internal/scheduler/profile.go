package scheduler

import (
	"fmt"
)

// Profile is a ready-to-run pipeline: the enabled plugins, configured, in registry order. It is
// never modified after NewProfile, so concurrent decisions may share it.
type Profile struct {
	filters []FilterPlugin
	scores  []weightedScore
	vmids   []VMIDPlugin
	// validators are every enabled plugin that checks requests at plan time.
	validators []RequestValidator
	// disabled maps the annotation keys of the disabled plugins to their plugin's name.
	disabled map[string]string
	// byName is a set's profile per request name (SetProfile); nil for a plain profile.
	byName map[string]*Profile
}

type weightedScore struct {
	plugin ScorePlugin
	weight float64
}

// NewProfile builds the pipeline from a registry and a merged plugin config. Unknown plugin
// names, unknown args, bad arg values and negative weights are InputErrors on
// "plugin_config".
func NewProfile(reg Registry, cfg PluginConfig) (*Profile, error) {
	const attr = "plugin_config"
	sections := []struct {
		kind  string
		specs []PluginSpec
		set   map[string]PluginSetting
	}{
		{"filter", reg.Filters, cfg.Filters},
		{"score", reg.Scores, cfg.Scores},
		{"vmid", reg.VMIDs, cfg.VMIDs},
	}
	p := &Profile{}
	for _, sec := range sections {
		if err := checkSection(sec.kind, sec.specs, sec.set, attr); err != nil {
			return nil, err
		}
		for _, spec := range sec.specs {
			setting := sec.set[spec.Name]
			// Built even when disabled, so that bad args are reported before someone
			// enables the plugin.
			plugin, err := spec.New(setting.Args)
			if err != nil {
				return nil, &InputError{Attribute: attr, Key: spec.Name, Message: fmt.Sprintf("%s plugin %s: %v", sec.kind, spec.Name, err)}
			}
			enabled := !spec.DefaultOff
			if setting.Enable != nil {
				enabled = *setting.Enable
			}
			if !enabled {
				for _, a := range spec.Annotations {
					if p.disabled == nil {
						p.disabled = map[string]string{}
					}
					p.disabled[a.Key] = spec.Name
				}
				continue
			}
			if err := p.add(sec.kind, plugin, setting); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

func (p *Profile) add(kind string, plugin Plugin, setting PluginSetting) error {
	switch kind {
	case "filter":
		f, ok := plugin.(FilterPlugin)
		if !ok {
			return fmt.Errorf("plugin %s registered as a filter is not a FilterPlugin", plugin.Name())
		}
		p.filters = append(p.filters, f)
	case "score":
		s, ok := plugin.(ScorePlugin)
		if !ok {
			return fmt.Errorf("plugin %s registered as a score is not a ScorePlugin", plugin.Name())
		}
		weight := int64(1)
		if setting.Weight != nil {
			weight = *setting.Weight
		}
		p.scores = append(p.scores, weightedScore{plugin: s, weight: float64(weight)})
	case "vmid":
		v, ok := plugin.(VMIDPlugin)
		if !ok {
			return fmt.Errorf("plugin %s registered as a vmid plugin is not a VMIDPlugin", plugin.Name())
		}
		p.vmids = append(p.vmids, v)
	}
	if v, ok := plugin.(RequestValidator); ok {
		p.validators = append(p.validators, v)
	}
	return nil
}

// Sizes beyond which a request's arithmetic could wrap: 2^20 vCPUs and 2^32 MiB (4 PiB) keep
// a node's sums of millions of guests well inside 64 bits. PVE's own limits are lower.
const (
	maxVCPUs     = 1 << 20
	maxMemoryMiB = 1 << 32
)

// IgnoredAnnotations maps each annotation of r that no enabled plugin reads to the disabled
// plugin that would: the decision ignores it.
func (p *Profile) IgnoredAnnotations(r *Request) map[string]string {
	ignored := map[string]string{}
	for key := range r.Annotations {
		if plugin, ok := p.of(r).disabled[key]; ok {
			ignored[key] = plugin
		}
	}
	return ignored
}

// ValidateRequest checks a request without a snapshot: sizes, pins and every enabled plugin's
// annotation. Errors are InputErrors naming the attribute.
func (p *Profile) ValidateRequest(r *Request) error {
	switch {
	case r.Cores < 1:
		return &InputError{Attribute: "cores", Message: fmt.Sprintf("must be at least 1, got %d", r.Cores)}
	case r.Sockets < 1:
		return &InputError{Attribute: "sockets", Message: fmt.Sprintf("must be at least 1, got %d", r.Sockets)}
	case r.MemoryMiB < 1:
		return &InputError{Attribute: "memory", Message: fmt.Sprintf("must be at least 1 MiB, got %d", r.MemoryMiB)}
	// The capacity arithmetic multiplies these (vCPUs, bytes, sums over a node's guests):
	// sizes that could wrap are refused, whatever the caller validated.
	case r.Cores > maxVCPUs/r.Sockets:
		return &InputError{Attribute: "cores", Message: fmt.Sprintf("cores x sockets = %d x %d exceeds %d vCPUs", r.Cores, r.Sockets, maxVCPUs)}
	case r.MemoryMiB > maxMemoryMiB:
		return &InputError{Attribute: "memory", Message: fmt.Sprintf("%d MiB exceeds %d MiB", r.MemoryMiB, maxMemoryMiB)}
	case r.VMID != 0 && (r.VMID < MinVMID || r.VMID > MaxVMID):
		return &InputError{Attribute: "vmid", Message: fmt.Sprintf("%d is outside the valid VMID range %d-%d", r.VMID, MinVMID, MaxVMID)}
	}
	for _, v := range p.of(r).validators {
		if err := v.ValidateRequest(r); err != nil {
			return err
		}
	}
	return nil
}
