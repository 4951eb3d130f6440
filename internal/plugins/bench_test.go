package plugins

import (
	"fmt"
	"testing"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

func benchSnapshot(nodes, guests int) scheduler.Snapshot {
	snap := scheduler.Snapshot{}
	for i := 0; i < nodes; i++ {
		n := node(fmt.Sprintf("pve%d", i+1), 64, 1024)
		n.CPU = float64(i%10) / 20
		n.Mem = uint64(i%7) * 64 * gib
		snap.Nodes = append(snap.Nodes, n)
	}
	for i := 0; i < guests; i++ {
		g := running(100+i, snap.Nodes[i%nodes].Name, 2, 1)
		if i%3 == 0 {
			g.Status = "stopped"
		}
		snap.Guests = append(snap.Guests, g)
	}
	return snap
}

func benchRequest(name string) scheduler.Request {
	r := request(name)
	r.Annotations[scheduler.AnnotationNodeRegex] = "pve[0-9]+"
	r.Annotations[scheduler.AnnotationVMIDRange] = "100-999999"
	return r
}

func BenchmarkSchedule(b *testing.B) {
	for _, size := range []struct{ nodes, guests int }{{8, 1000}, {64, 10000}} {
		b.Run(fmt.Sprintf("%dnodes_%dguests", size.nodes, size.guests), func(b *testing.B) {
			benchDecisions(b, benchSnapshot(size.nodes, size.guests), []scheduler.Request{benchRequest("web")})
		})
	}
}

func BenchmarkSchedule100VMs(b *testing.B) {
	reqs := make([]scheduler.Request, 100)
	for i := range reqs {
		reqs[i] = benchRequest(fmt.Sprintf("web-%d", i))
	}
	benchDecisions(b, benchSnapshot(64, 10000), reqs)
}

// benchDecisions times one Schedule call of reqs on snap with the default profile, run as
// the data source runs it (sticky).
func benchDecisions(b *testing.B, snap scheduler.Snapshot, reqs []scheduler.Request) {
	benchProfileDecisions(b, mustProfile(scheduler.PluginConfig{}), snap, reqs)
}

// benchProfileDecisions is benchDecisions with profile p.
func benchProfileDecisions(b *testing.B, p *scheduler.Profile, snap scheduler.Snapshot, reqs []scheduler.Request) {
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Schedule(snap, reqs, scheduler.Options{Sticky: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegexVMIDNoMatch builds the automaton and searches it on every iteration: what a
// decision pays for an expression it has not seen.
func BenchmarkRegexVMIDNoMatch(b *testing.B) {
	var used scheduler.IDSet
	for _, expr := range []string{`0.*`, `[a-z]+`, `9{10}`, `\d*5{10}`, `(\d?){1000}x`} {
		b.Run(expr, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				dfa, err := newDigitDFA(expr)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := dfa.lowestFree(used); ok {
					b.Fatal("expected no match")
				}
			}
		})
	}
}

// BenchmarkRegexVMIDDenseUsed searches past 10,000 used ids that all match.
func BenchmarkRegexVMIDDenseUsed(b *testing.B) {
	used := idRange(100, 10099)
	for i := 0; i < b.N; i++ {
		dfa, err := newDigitDFA(`\d+`)
		if err != nil {
			b.Fatal(err)
		}
		if id, _ := dfa.lowestFree(used); id != 10100 {
			b.Fatalf("id = %d, want 10100", id)
		}
	}
}
