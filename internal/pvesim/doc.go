// Package pvesim is an in-memory, stateful Proxmox VE API server for tests and demos. It
// answers with PVE's envelope, JSON types and error shapes so that clients written against it
// (go-proxmox in particular) behave as they would against a real cluster; a test compares its
// answers with the PVE 7, 8 and 9 responses recorded in go-proxmox.
//
// What it models:
//   - the release: PVE 8 (GET /version 8.2.4) for a cluster file without ha_rules, PVE 9
//     (9.2.11) with them; both answer as pve-manager's API2.pm version and node status and
//     version do, with the release's kernel and QEMU; qemu-server's and pve-storage's schema
//     and rules follow the release (PVE 8.2 has no import content, no amd-sev, virtiofsN...);
//   - auth: API tokens (no CSRF) and tickets from POST /access/ticket (CSRF header on writes);
//     401 "No ticket" or "authentication failure" with an empty body; one user, root@pam, and
//     its token without privilege separation, which GET /access/users and /access/permissions
//     report as they are: all-powerful (the Administrator role's privileges on every path).
//     What qemu-server leaves to root@pam itself (options outside its permission lists such
//     as arch and args, real serial/USB/PCI devices, skiplock, migrate's force, file system
//     paths) is refused to the token, whose user is root@pam!ID, as PVE refuses it;
//   - routing: empty path segments are skipped (a trailing slash reaches the same handler), as
//     pve-common's RESTHandler does;
//   - errors: 500 and 501 with the message as the HTTP reason phrase and in the body, 400 with
//     an "errors" map (config keys are checked against qemu-server's schema), 403 for missing
//     pools, 595 with an empty body for anything under an offline node;
//   - state: nodes with capacity and live load (host load plus running guests), storages with
//     their content types, volumes, snippets and used space (a shared storage is one object on
//     every node; content listed by GET .../storage/{storage}/content, a volume's attributes
//     by GET .../content/{volume}, a storage's figures by GET .../storage/{storage}/status;
//     a drive naming an existing volume records the volume's size), qemu and lxc guests,
//     templates, pools, tags normalised as PVE does, datacenter next-id bounds; cicustom
//     snippets checked when the cloud-init drive is generated (start), as qemu-server does;
//   - files: ISO, template and import files uploaded (multipart, imgcopy task) or downloaded
//     (download-url, query-url-metadata) from a simulated web (the cluster file's
//     remote_files: the simulator reaches no URL), volumes deleted (imgdel task; a base volume
//     in use by a linked clone is refused), the storage.cfg section (GET /storage/{storage});
//   - tasks can be stopped (DELETE .../tasks/{upid}: a running one ends "received interrupt")
//     and listed (GET /nodes/{node}/tasks with its filters, most recently finished first);
//   - nodes: host-arch, node config with Notes (description, stored and digested as PVE does),
//     HA node states (hastate on /cluster/resources node rows once HA has run, and
//     /cluster/ha/status/manager_status, whose service_status gives each service's CRM state,
//     node and the target of a move under way), switched at run time like node-maintenance;
//   - HA: resources (/cluster/ha/resources, removal purges them from the rules) and the HA
//     manager's rounds; PVE 9 rules (/cluster/ha/rules: list with type and resource filters,
//     read, create, update with digest and delete, remove) with pve-ha-manager's feasibility
//     checks and messages, applied as its transform leaves them (connected positive rules
//     merged, negative affinity extended across a positive group, a group's node-affinity
//     rule holding for every member); recovery after FailNode on a node the rules allow (as
//     select_service_node: the highest priority class of node affinity, no negative peer there
//     or migrating there, the node most positive peers are on, then the node with the fewest
//     HA services, a stopped one counting nowhere) or none (the service stays in recovery,
//     retried every round; disabled, it leaves recovery as stopped); a service requested back
//     on a failed node is fenced and recovered; a migrate takes positive peers along
//     (comigrated-resources), and one next to a negative peer is answered with
//     blocking-resources and refused;
//     the HA manager's migrations take local disks along, as PVEVM's migrate passes
//     with-local-disks; it chooses nodes without looking at storage, so a guest recovered
//     away from its local disks fails to start there and ends in the error state;
//     node maintenance migrates the node's started HA services (qmigrate under lock) to the
//     nodes that recovery would choose, or leaves them when none is allowed, and brings them
//     back to their maintenance node when it ends; each round a started service outside the
//     highest priority class of its node-affinity rule it can use is migrated there (failback,
//     PVE 9's resource flag, on by default; off, only a node breaking a rule moves it); PVE 8
//     HA groups (/cluster/ha/groups) that resources name, applied as the node-affinity rule
//     PVE 9 turns a group into (nofailback is failback off); the HA manager's starts fail as
//     vm_start does (more vCPUs than the node has, a missing cicustom snippet), and the
//     service is relocated to a node where it has not failed, max_relocate times, then put
//     into the error state, which only disabling it leaves; a node's shutdown and reboot
//     (ShutdownNode) under datacenter.cfg's shutdown_policy (SetHAShutdownPolicy: conditional,
//     freeze, failover, migrate); disarm-ha in freeze or ignore mode and arm-ha (DisarmHA,
//     ArmHA; their API endpoints are not routed); HA starts and migrations that fail a set
//     number of attempts and stops that fail (SetHAFaults; a failed stop is the error state);
//     HAServices reads the HA manager from Go;
//   - the HA manager's scheduler (datacenter.cfg crs, the cluster file's crs, SetCRS, shown by
//     GET /cluster/options), over one get_used_service_nodes (usedNodes) for load and rules:
//     basic counts the HA services on a node; static (PVE 8.2 and 9.2)
//     scores nodes by the configured CPUs and memory of the services, dynamic (PVE 9.2) by the
//     nodes' live load and the guests' (SetGuestLoad), both with proxmox-resource-scheduling's
//     TOPSIS, for recovery, maintenance, failback and ha-rebalance-on-start (a service placed
//     on the best node before it starts); from PVE 9.2 running non-HA guests count too.
//     PVE 9.2's ha-auto-rebalance migrates, once the node imbalance (the coefficient of
//     variation of the node loads over sqrt(n-1)) has exceeded its threshold (percent) for its
//     hold duration (rounds), the one service or positive-affinity bundle whose move, scored
//     by bruteforce or TOPSIS, lowers it by the margin (percent), honouring the rules and the
//     resource's auto-rebalance flag, none while another move runs; RunHARounds runs rounds;
//   - VM lifecycle as tasks with real UPIDs, run at once or after a set duration: create,
//     clone (on the source node; full, or linked from base volumes; target node only from
//     shared storage),
//     config get/set with digest and locks, pending changes on running VMs, resize (grow only),
//     conversion to a template (base volumes on storages with the template feature),
//     start/stop/shutdown/reboot, migrate (disks on local storage move along; a target that is
//     down when the worker runs, offline when asked or failing while the task is held, ends
//     it "migration aborted", as does any failure of a stopped VM's migration; one failing
//     during a live transfer ends it "migration problems"; the VM stays on its source,
//     unlocked, an HA service started there), destroy; clones and migrations to an offline
//     cluster member are accepted, as PVE checks membership only;
//     "already exists" is decided when a create or clone task runs;
//   - faults for tests: latency, failing requests (next N or a rate), lost responses, failing
//     tasks, held tasks, offline nodes, ids taken and guests moved or deleted by outside actors,
//     and /cluster/resources without stats for new guests until Tick, 403 for a missing
//     privilege on an endpoint (Forbid).
//
// bpg-endpoints.md and telmate-endpoints.md list what the bpg and Telmate providers call and
// what the simulator does for each. ha_scenarios.md measures the HA manager against
// pve-ha-manager's own regression scenarios (testdata/ha-scenarios, TestHAScenarios): per
// group, how many run and agree, and why the others are left out.
//
// What it does not: containers beyond listing, snapshots, backups, firewall, SDN, ACLs, users
// and tokens beyond the one of each, and any endpoint not routed (those answer 501 with their
// path, so gaps show).
package pvesim
