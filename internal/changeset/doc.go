// Package changeset is what one provider process knows of its plan's change set: the new VMs
// planned and not yet decided, the picks of the placement data sources, the planned sizes of
// the existing VMs that grow, and, at apply, the creates decided. Every plan-time check and
// every create decision reads it, so that a plan's new VMs are placed together (all or
// nothing) and no two of its picks share a VMID or capacity.
//
// It knows nothing of Terraform: it returns errors (the provider turns them into diagnostics,
// kit.AddPlanError), logs through Set.Warn, and times its waits (wait.go) on Set.Clock, so that
// their windows are tested without sleeping. It imports the scheduler, reservations and
// planhints, and nothing of internal/provider.
package changeset
