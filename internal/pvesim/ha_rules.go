package pvesim

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
)

// handleHARules answers GET /cluster/ha/rules as PVE 9 does: resources and nodes as comma
// strings sorted by name, a priority of 0 written as the bare node name, strict and disable
// only when set, order as the file position and one digest for every row. A cluster without
// rules is PVE 8, which has no such method.
func (s *Server) handleHARules(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.haRules == nil {
		notImplemented(w, r)
		return
	}
	var file strings.Builder
	for _, rule := range s.haRules {
		fmt.Fprintf(&file, "%s: %s\n\tresources %s\n", rule.Type, rule.Rule, strings.Join(rule.Resources, ","))
	}
	sum := sha1.Sum([]byte(file.String()))
	digest := hex.EncodeToString(sum[:])
	typ := r.URL.Query().Get("type")
	out := []map[string]any{}
	for i, rule := range s.haRules {
		if typ != "" && rule.Type != typ {
			continue
		}
		row := map[string]any{"rule": rule.Rule, "type": rule.Type, "resources": sortedList(rule.Resources), "order": i + 1, "digest": digest}
		if rule.Type == "node-affinity" {
			nodes := make([]string, len(rule.Nodes))
			for j, n := range rule.Nodes {
				nodes[j] = strings.TrimSuffix(n, ":0")
			}
			row["nodes"] = sortedList(nodes)
			if rule.Strict {
				row["strict"] = 1
			}
		} else {
			row["affinity"] = rule.Affinity
		}
		if rule.Disable {
			row["disable"] = 1
		}
		if rule.Comment != "" {
			row["comment"] = rule.Comment
		}
		out = append(out, row)
	}
	writeData(w, out)
}

func sortedList(items []string) string {
	sorted := append([]string(nil), items...)
	sort.Strings(sorted)
	return strings.Join(sorted, ",")
}

// validateHARules refuses what PVE's rules.cfg parser and rule checks refuse: an unknown
// type, a bad rule id, unknown nodes, resources that are not vm:N or ct:N of a listed guest,
// a resource-affinity rule without affinity or with fewer than two resources.
func (c Cluster) validateHARules(nodes map[string]bool, ids map[int]bool) error {
	seen := map[string]bool{}
	for _, r := range c.HARules {
		if !haRuleID.MatchString(r.Rule) || seen[strings.ToLower(r.Rule)] {
			return fmt.Errorf("cluster file: HA rule %q: ids match [a-z][a-z0-9_-]+ and are unique", r.Rule)
		}
		seen[strings.ToLower(r.Rule)] = true
		for _, sid := range r.Resources {
			var kind string
			var vmid int
			if _, err := fmt.Sscanf(sid, "%2s:%d", &kind, &vmid); err != nil || (kind != "vm" && kind != "ct") || !ids[vmid] {
				return fmt.Errorf("cluster file: HA rule %q: resource %q is not vm:<vmid> or ct:<vmid> of a listed guest", r.Rule, sid)
			}
		}
		switch r.Type {
		case "node-affinity":
			if len(r.Nodes) == 0 {
				return fmt.Errorf("cluster file: HA rule %q: node-affinity needs nodes", r.Rule)
			}
			for _, n := range r.Nodes {
				if !nodes[strings.SplitN(n, ":", 2)[0]] {
					return fmt.Errorf("cluster file: HA rule %q: cannot use non-existent node(s) %s", r.Rule, n)
				}
			}
		case "resource-affinity":
			if r.Affinity != "positive" && r.Affinity != "negative" {
				return fmt.Errorf("cluster file: HA rule %q: affinity must be positive or negative", r.Rule)
			}
			if len(r.Resources) < 2 {
				return fmt.Errorf("cluster file: HA rule %q: rule is ineffective as there are less than two resources", r.Rule)
			}
		default:
			return fmt.Errorf("cluster file: HA rule %q: type must be node-affinity or resource-affinity", r.Rule)
		}
	}
	return nil
}

var haRuleID = regexp.MustCompile(`^(?i)[a-z][a-z0-9_-]+$`)
