package pvesim

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

func (s *Server) guestList(typ string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.requireOnline(w, r) {
			return
		}
		rows := []map[string]any{}
		for _, g := range s.sortedGuests() {
			if g.node == r.PathValue("node") && g.typ == typ {
				rows = append(rows, s.listRow(g))
			}
		}
		writeData(w, rows)
	}
}

// listRow is a /nodes/{node}/qemu row: template only when 1, pid only when running.
func (s *Server) listRow(g *guest) map[string]any {
	row := map[string]any{"vmid": g.vmid, "name": g.name(), "status": g.status, "cpus": g.vcpus(), "maxmem": g.memoryBytes(),
		"maxdisk": s.diskBytes(g), "disk": 0, "uptime": 0, "cpu": 0, "mem": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0}
	if g.template() {
		row["template"] = 1
	}
	if g.status == "running" {
		row["pid"], row["uptime"], row["cpu"], row["mem"] = 10000+g.vmid, 3600, 0.02, g.memoryBytes()/2
	}
	if tags := g.config["tags"]; tags != "" {
		row["tags"] = tags
	}
	if g.lock != "" {
		row["lock"] = g.lock
	}
	return row
}

// lookup finds the qemu guest {vmid} on {node}, answering like PVE when it is not there. The
// caller holds s.mu.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *guest {
	if !s.requireOnline(w, r) {
		return nil
	}
	id, _ := strconv.Atoi(r.PathValue("vmid"))
	g, ok := s.guests[id]
	if !ok || g.node != r.PathValue("node") || g.typ != "qemu" {
		writeStatus(w, http.StatusInternalServerError, fmt.Sprintf("Configuration file 'nodes/%s/qemu-server/%s.conf' does not exist", r.PathValue("node"), r.PathValue("vmid")), nil)
		return nil
	}
	return g
}

// unlocked is lookup for changes: a locked VM (clone, migrate, destroy running) refuses them,
// as in PVE. The caller holds s.mu.
func (s *Server) unlocked(w http.ResponseWriter, r *http.Request) *guest {
	g := s.lookup(w, r)
	if g != nil && g.lock != "" {
		writeStatus(w, http.StatusInternalServerError, fmt.Sprintf("VM is locked (%s)", g.lock), nil)
		return nil
	}
	return g
}

func (s *Server) handleConfigGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.lookup(w, r); g != nil {
		writeData(w, g.configJSON())
	}
}

func (s *Server) handleStatusCurrent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.lookup(w, r)
	if g == nil {
		return
	}
	row := s.listRow(g)
	row["ha"] = map[string]any{"managed": 0}
	row["qmpstatus"] = g.status
	if boolParam(strings.Split(g.config["agent"], ",")[0]) || strings.Contains(g.config["agent"], "enabled=1") {
		row["agent"] = 1
	}
	writeData(w, row)
}

var storageAlloc = regexp.MustCompile(`^([a-zA-Z0-9][a-zA-Z0-9\-_.]*):(\d+(?:\.\d+)?)(,.*)?$`)

// applyConfig validates and applies config keys to g (PVE's create/set semantics): disks given
// as STORAGE:SIZE_GB are allocated, NICs get MACs, tags are normalised. It returns a 400
// errors map for bad values. The caller holds s.mu.
func (s *Server) applyConfig(g *guest, n *node, set map[string]string) map[string]string {
	errs := map[string]string{}
	for k, v := range set {
		switch {
		case k == "name" && !regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`).MatchString(v):
			errs[k] = "value does not look like a valid DNS name"
		case (k == "cores" || k == "sockets") && atoi(v) < 1:
			errs[k] = "value must have a minimum value of 1"
		case k == "memory" && atoi(strings.TrimPrefix(v, "current=")) < 16:
			errs[k] = "value must have a minimum value of 16"
		case k == "tags":
			for _, t := range strings.Split(normalizeTags(v), ";") {
				if t != "" && !tagPattern.MatchString(t) {
					errs[k] = "invalid format - invalid characters in tag '" + t + "'"
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if b := atoi(set["balloon"]); b > 0 {
		mem := set["memory"]
		if mem == "" {
			mem = g.config["memory"]
		}
		if m := atoi(strings.TrimPrefix(mem, "current=")); m > 0 && b > m {
			return map[string]string{"balloon": "balloon value too large (must be smaller than assigned memory)"}
		}
	}
	for k, v := range set {
		switch {
		case k == "tags":
			v = normalizeTags(v)
		case strings.HasPrefix(k, "net"):
			v = withMAC(v, s.rng, false)
		case diskKey.MatchString(k):
			if m := storageAlloc.FindStringSubmatch(v); m != nil {
				if n.storage(m[1]) == nil {
					return map[string]string{k: fmt.Sprintf("storage '%s' does not exist", m[1])}
				}
				size, _ := strconv.ParseFloat(m[2], 64)
				v = fmt.Sprintf("%s:%s,size=%s%s", m[1], n.volume(m[1], g.vmid), formatSize(size), m[3])
			} else if strings.HasSuffix(v, ":cloudinit") {
				v = fmt.Sprintf("%s:vm-%d-cloudinit,media=cdrom", strings.TrimSuffix(v, ":cloudinit"), g.vmid)
			}
		}
		if v == "" {
			delete(g.config, k)
			continue
		}
		g.config[k] = v
	}
	return nil
}

func (n *node) storage(name string) *storage {
	for _, st := range n.storages {
		if st.name == name {
			return st
		}
	}
	return nil
}

func (n *node) volume(storageName string, vmid int) string {
	key := fmt.Sprintf("%s/%d", storageName, vmid)
	i := n.diskCount[key]
	n.diskCount[key] = i + 1
	return fmt.Sprintf("vm-%d-disk-%d", vmid, i)
}

// configKeys keeps the parameters that are VM config, not API call options.
func configKeys(p map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range p {
		switch k {
		case "vmid", "start", "digest", "delete", "pool", "skiplock", "background_delay", "force", "storage", "unique", "archive":
			continue
		}
		out[k] = v
	}
	return out
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.requireOnline(w, r) {
		return
	}
	p := params(r)
	vmid, ok := parseVMID(p["vmid"])
	if !ok {
		writeStatus(w, http.StatusBadRequest, "Parameter verification failed.", map[string]string{"vmid": "invalid format - value does not look like a valid VM ID"})
		return
	}
	n := s.node(r.PathValue("node"))
	if other, taken := s.guests[vmid]; taken {
		writeStatus(w, http.StatusInternalServerError, fmt.Sprintf("unable to create VM %d - VM %d already exists on node '%s'", vmid, vmid, other.node), nil)
		return
	}
	if pool := p["pool"]; pool != "" && !s.pools[pool] {
		writeStatus(w, http.StatusForbidden, fmt.Sprintf("Permission check failed (pool '%s' does not exist)", pool), nil)
		return
	}
	g := &guest{vmid: vmid, node: n.name, typ: "qemu", status: "stopped", pool: p["pool"], config: map[string]string{}, hasStats: !s.statsLag}
	if errs := s.applyConfig(g, n, configKeys(p)); errs != nil {
		writeStatus(w, http.StatusBadRequest, "Parameter verification failed.", errs)
		return
	}
	start := boolParam(p["start"])
	upid := s.startTask(n.name, "qmcreate", vmid, nil, func() string {
		if other, taken := s.guests[vmid]; taken {
			return fmt.Sprintf("unable to create VM %d - VM %d already exists on node '%s'", vmid, vmid, other.node)
		}
		s.guests[vmid] = g
		if start {
			g.status = "running"
		}
		return ""
	})
	writeData(w, upid)
}

func (s *Server) handleConfigSet(async bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		g := s.unlocked(w, r)
		if g == nil {
			return
		}
		p := params(r)
		if d := p["digest"]; d != "" && d != g.digest() {
			writeStatus(w, http.StatusInternalServerError, "checksum mismatch (file change by other user?)", nil)
			return
		}
		set := configKeys(p)
		del := strings.FieldsFunc(p["delete"], func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
		for _, k := range del {
			if _, both := set[k]; both {
				writeStatus(w, http.StatusBadRequest, "Parameter verification failed.", map[string]string{"delete": "cannot set and delete '" + k + "' at the same time"})
				return
			}
		}
		if len(set) == 0 && len(del) == 0 {
			writeStatus(w, http.StatusInternalServerError, "no options specified", nil)
			return
		}
		n := s.node(g.node)
		next := &guest{vmid: g.vmid, config: map[string]string{}}
		for k, v := range g.config {
			next.config[k] = v
		}
		if errs := s.applyConfig(next, n, set); errs != nil {
			writeStatus(w, http.StatusBadRequest, "Parameter verification failed.", errs)
			return
		}
		warnings := 0
		for _, k := range del {
			if _, ok := next.config[k]; !ok {
				warnings++
			}
			delete(next.config, k)
		}
		g.config = next.config
		if !async {
			writeData(w, nil)
			return
		}
		writeData(w, s.startTask(g.node, "qmconfig", g.vmid, nil, func() string {
			if warnings > 0 {
				return fmt.Sprintf("WARNINGS: %d", warnings)
			}
			return ""
		}))
	}
}

func (s *Server) handlePower(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.lookup(w, r)
	if g == nil {
		return
	}
	action := r.PathValue("action")
	types := map[string]string{"start": "qmstart", "stop": "qmstop", "shutdown": "qmshutdown", "reboot": "qmreboot"}
	typ, ok := types[action]
	if !ok {
		writeStatus(w, http.StatusNotImplemented, "Method 'POST "+strings.TrimPrefix(r.URL.Path, apiPrefix)+"' not implemented", nil)
		return
	}
	writeData(w, s.startTask(g.node, typ, g.vmid, nil, func() string {
		switch action {
		case "start":
			switch {
			case g.template():
				return "you can't start a vm if it's a template"
			case g.status == "running":
				return fmt.Sprintf("VM %d already running", g.vmid)
			}
			g.status = "running"
		case "stop", "shutdown":
			g.status = "stopped"
		}
		return ""
	}))
}

func (s *Server) handleResize(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.unlocked(w, r)
	if g == nil {
		return
	}
	p := params(r)
	disk, ok := g.config[p["disk"]]
	if !ok {
		writeStatus(w, http.StatusInternalServerError, fmt.Sprintf("disk '%s' does not exist", p["disk"]), nil)
		return
	}
	if strings.Contains(disk, "media=cdrom") {
		writeStatus(w, http.StatusInternalServerError, "you can't resize a cdrom", nil)
		return
	}
	size := p["size"]
	current := sizeGiB(disk)
	target := parseSize(strings.TrimPrefix(size, "+"))
	if target == 0 && strings.TrimPrefix(size, "+") != "0" {
		writeStatus(w, http.StatusBadRequest, "Parameter verification failed.", map[string]string{"size": "value does not match the regex pattern"})
		return
	}
	if strings.HasPrefix(size, "+") {
		target += current
	}
	if target < current {
		writeStatus(w, http.StatusInternalServerError, "shrinking disks is not supported", nil)
		return
	}
	key := p["disk"]
	writeData(w, s.startTask(g.node, "resize", g.vmid, nil, func() string {
		g.config[key] = setDiskSize(g.config[key], target)
		return ""
	}))
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.unlocked(w, r)
	if g == nil {
		return
	}
	if g.status == "running" {
		writeStatus(w, http.StatusInternalServerError, fmt.Sprintf("VM %d is running - destroy failed", g.vmid), nil)
		return
	}
	g.lock = "destroyed"
	writeData(w, s.startTask(g.node, "qmdestroy", g.vmid, g, func() string {
		delete(s.guests, g.vmid)
		return ""
	}))
}

func (s *Server) handleMigrate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.unlocked(w, r)
	if g == nil {
		return
	}
	p := params(r)
	target := s.node(p["target"])
	switch {
	case target == nil:
		writeStatus(w, http.StatusInternalServerError, fmt.Sprintf("no such cluster node '%s'", p["target"]), nil)
		return
	case target.name == g.node:
		writeStatus(w, http.StatusBadRequest, "Parameter verification failed.", map[string]string{"target": "target is local node."})
		return
	case !target.online:
		writeStatus(w, http.StatusInternalServerError, fmt.Sprintf("target node '%s' is not online", target.name), nil)
		return
	case g.status == "running" && !boolParam(p["online"]):
		writeStatus(w, http.StatusInternalServerError, "can't migrate running VM without --online", nil)
		return
	}
	g.lock = "migrate"
	writeData(w, s.startTask(g.node, "qmigrate", g.vmid, g, func() string {
		g.lock = ""
		g.node = target.name
		return ""
	}))
}

func (s *Server) handleClone(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := s.lookup(w, r)
	if src == nil {
		return
	}
	p := params(r)
	newid, ok := parseVMID(p["newid"])
	if !ok {
		writeStatus(w, http.StatusBadRequest, "Parameter verification failed.", map[string]string{"newid": "invalid format - value does not look like a valid VM ID"})
		return
	}
	if _, taken := s.guests[newid]; taken {
		writeStatus(w, http.StatusInternalServerError, fmt.Sprintf("unable to create VM %d: config file already exists", newid), nil)
		return
	}
	full := !src.template()
	if v, ok := p["full"]; ok {
		full = boolParam(v)
	}
	target := s.node(src.node)
	if t := p["target"]; t != "" {
		if target = s.node(t); target == nil || !target.online {
			writeStatus(w, http.StatusInternalServerError, fmt.Sprintf("target node '%s' is not online", t), nil)
			return
		}
	}
	storageName := p["storage"]
	if storageName != "" && !full {
		writeStatus(w, http.StatusInternalServerError, "parameter 'storage' not allowed for linked clones", nil)
		return
	}
	if storageName != "" && target.storage(storageName) == nil {
		writeStatus(w, http.StatusInternalServerError, fmt.Sprintf("storage '%s' does not exist on node '%s'", storageName, target.name), nil)
		return
	}
	if target.name != src.node {
		for _, k := range src.disks() {
			st := s.node(src.node).storage(strings.SplitN(src.config[k], ":", 2)[0])
			if st == nil || !st.shared {
				writeStatus(w, http.StatusInternalServerError, fmt.Sprintf("can't clone VM to node '%s' (VM uses local storage)", target.name), nil)
				return
			}
		}
	}
	if pool := p["pool"]; pool != "" && !s.pools[pool] {
		writeStatus(w, http.StatusForbidden, fmt.Sprintf("Permission check failed (pool '%s' does not exist)", pool), nil)
		return
	}
	clone := &guest{vmid: newid, node: target.name, typ: "qemu", status: "stopped", pool: p["pool"], config: map[string]string{}, hasStats: !s.statsLag}
	for k, v := range src.config {
		switch {
		case k == "template" || strings.HasPrefix(k, "unused"):
			continue
		case strings.HasPrefix(k, "net"):
			v = withMAC(v, s.rng, true)
		case diskKey.MatchString(k):
			parts := strings.SplitN(v, ":", 2)
			st := parts[0]
			if storageName != "" && !strings.Contains(v, "media=cdrom") {
				st = storageName
			}
			rest := regexp.MustCompile(`(base|vm)-\d+-(disk-\d+|cloudinit)`).ReplaceAllString(parts[len(parts)-1], fmt.Sprintf("vm-%d-$2", newid))
			v = st + ":" + rest
		}
		clone.config[k] = v
	}
	clone.config["name"] = p["name"]
	if clone.config["name"] == "" {
		clone.config["name"] = "Copy-of-VM-" + src.name()
	}
	if d := p["description"]; d != "" {
		clone.config["description"] = d
	}
	src.lock = "clone"
	writeData(w, s.startTask(src.node, "qmclone", src.vmid, src, func() string {
		src.lock = ""
		if other, taken := s.guests[newid]; taken {
			return fmt.Sprintf("clone failed: unable to create VM %d - VM %d already exists on node '%s'", newid, newid, other.node)
		}
		s.guests[newid] = clone
		return ""
	}))
}
