package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"

	"github.com/qemuscheduler/terraform-provider-qemuscheduler/internal/scheduler"
)

// migrationLine is what a migration's phase1 logs before it sets the guest's "migrate" lock
// (qemu-server's QemuMigrate.pm for a qmigrate task, pve-container's LXC/Migrate.pm for a
// vzmigrate one), after the line's timestamp: a guest locked "migrate" has it in its log.
var migrationLine = regexp.MustCompile(`starting migration of (?:VM|CT) (\d+) to node '([^']+)'`)

// migrationTargets sets MigratingTo on the guests a migration under way moves (locked
// "migrate", counting for capacity, on an online node): PVE lists them on their source until
// the move's last step and names the target only in the migration task's log. It costs two
// requests per such guest (its node's running migration tasks of it, then the task's log),
// none when no guest is being migrated. A migration that ended meanwhile leaves no running
// task: the guest keeps no target.
func (c *Client) migrationTargets(ctx context.Context, snap *scheduler.Snapshot) error {
	online := map[string]bool{}
	for _, n := range snap.Nodes {
		online[n.Name] = n.Online
	}
	for i := range snap.Guests {
		g := &snap.Guests[i]
		if g.Lock != "migrate" || !g.CountsForCapacity() || !online[g.Node] {
			continue
		}
		target, err := c.migrationTarget(ctx, g)
		if err != nil && !errors.Is(err, ErrNodeOffline) {
			return err
		}
		g.MigratingTo = target
	}
	return nil
}

// migrationTarget reads where guest g's running migration goes, "" when none runs.
func (c *Client) migrationTarget(ctx context.Context, g *scheduler.Guest) (string, error) {
	op := fmt.Sprintf("read where the migration of guest %d goes", g.VMID)
	typ := "qmigrate"
	if g.Type == scheduler.GuestLXC {
		typ = "vzmigrate"
	}
	var tasks []struct {
		UPID string `json:"upid"`
	}
	params := map[string]string{"source": "active", "vmid": strconv.Itoa(g.VMID), "typefilter": typ}
	if err := c.get(ctx, op, "/nodes/"+g.Node+"/tasks", params, &tasks); err != nil {
		return "", err
	}
	for _, t := range tasks {
		var lines []struct {
			T string `json:"t"`
		}
		if err := c.get(ctx, op, fmt.Sprintf("/nodes/%s/tasks/%s/log", g.Node, url.PathEscape(t.UPID)), nil, &lines); err != nil {
			return "", err
		}
		for _, l := range lines {
			if m := migrationLine.FindStringSubmatch(l.T); m != nil && m[1] == strconv.Itoa(g.VMID) {
				return m[2], nil
			}
		}
	}
	return "", nil
}
