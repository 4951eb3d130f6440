package scheduler

import (
	"fmt"
	"sort"
	"strings"
)

// unschedulableMessage reads like kube-scheduler's: "0/5 nodes are available: 3 node(s) didn't
// match node regex "^pve[12]$", 2 node(s) exceeded memory overcommit ratio 1". Groups are
// ordered by count, then text, so the message is stable.
func unschedulableMessage(total int, groups map[string]int) string {
	type group struct {
		text  string
		count int
	}
	list := make([]group, 0, len(groups))
	for text, count := range groups {
		list = append(list, group{text, count})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].count != list[j].count {
			return list[i].count > list[j].count
		}
		return list[i].text < list[j].text
	})
	parts := make([]string, len(list))
	for i, g := range list {
		parts[i] = fmt.Sprintf("%d node(s) %s", g.count, g.text)
	}
	return fmt.Sprintf("0/%d nodes are available: %s", total, strings.Join(parts, ", "))
}
