package vmresource

// The rules of a VM's peers: a placement the provider makes (a create, a pinned move) gives
// the VM a new home, and the priority classes of the other members of its groups count the
// members by their homes (design-failover §2). The apply that places it rewrites their rules
// too, as each one's own plan would, so that no peer's plan shows a change afterwards.

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/harules"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/provider/config"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/proxmox"
	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// syncPeerRules, after the VM vmid's own rules were written for a placement with the policy p,
// rewrites the node rules of the HA-managed VMs whose classes count it (harules.Counts): what
// each one's own plan computes from its placement record, its strictness as its node rule has
// it and its home as the rule records it, read after since as the VM's own rules were. Only a
// new ranking of a peer's own node rule is written (harules.Reranks), once PVE's checks pass;
// a peer without a record or its own node rule, or whose record gives other nodes (its
// configuration layers its profile), is left to its own apply. A lost race starts over.
func (r *Resource) syncPeerRules(ctx context.Context, vmid int, p haPolicy, since time.Time) error {
	snap, err := r.Data.SnapshotSince(ctx, since)
	if err != nil {
		return err
	}
	var peers []scheduler.Guest
	for _, g := range snap.Guests {
		if g.VMID != vmid && g.Type == scheduler.GuestQEMU && !g.Assumed && !g.Arriving() && g.Recorded != nil &&
			harules.Counts(g.Recorded.Policy, p.req.Tags) && !slices.ContainsFunc(peers, func(o scheduler.Guest) bool { return o.VMID == g.VMID }) {
			peers = append(peers, g)
		}
	}
	if len(peers) == 0 {
		return nil
	}
	profiles := r.Data.RecordProfiles()
	written := map[int]bool{}
	for conflicts := 0; ; {
		round := time.Now()
		view, err := r.Data.HA.Read(ctx, r.Data.Client, round)
		if err != nil || !view.Rules.Supported {
			return err
		}
		var next []harules.Change
		var digest string
		peer := 0
		for _, g := range peers {
			pp, ok := peerPolicy(g, view, profiles)
			if !ok || written[g.VMID] {
				continue
			}
			// The views of this round: the rules just read, the cluster as the VM's own.
			s, err := r.haChanges(ctx, haRulesKeep, pp, g.VMID, round, since)
			if err != nil {
				return err
			}
			if len(s.lost) == 0 && harules.Reranks(g.VMID, s.changes, s.view.Rules.Rules) &&
				len(Refusals(s.changes, s.view.Rules.Rules, len(s.snap.Nodes))) == 0 {
				next, digest, peer = s.changes, s.view.Rules.Digest, g.VMID
				break
			}
		}
		if len(next) == 0 {
			return nil
		}
		// One update a round: the next needs the digest this one makes.
		_, err = r.writeHARules(ctx, next, digest)
		switch {
		case err == nil:
			written[peer] = true
		case !errors.Is(err, proxmox.ErrHARuleConflict) || conflicts == maxHARuleAttempts:
			return err
		default:
			conflicts++
		}
	}
}

// peerPolicy is the policy the HA-managed guest g's own plan computes its rules from, as the
// cluster keeps it: its placement record under the profile it names, its tags, name and
// vCPUs, and its strictness from its own node rule. ok is false where these cannot say: no
// record, no node rule of its own (its rules are off, or a group shares one), an unknown
// profile.
func peerPolicy(g scheduler.Guest, view config.HAView, profiles func(string) (*scheduler.Profile, error)) (p haPolicy, ok bool) {
	own := harules.NodeRuleName(g.VMID)
	i := slices.IndexFunc(view.Rules.Rules, func(r scheduler.HARule) bool {
		return r.Name == own && r.Type == scheduler.HANodeAffinity && !r.Disabled && slices.Equal(r.VMIDs, []int{g.VMID})
	})
	if i < 0 || g.Recorded == nil || !view.Managed[g.VMID] {
		return p, false
	}
	profile, err := profiles(g.Recorded.Profile)
	if err != nil {
		return p, false
	}
	req := g.Recorded.Policy
	req.Name, req.Tags = g.Name, g.Tags
	req.Cores, req.Sockets = max(1, int(math.Ceil(g.CPUs))), 1
	return haPolicy{Profile: profile, req: req, Name: g.Name, strict: view.Rules.Rules[i].Strict}, true
}
