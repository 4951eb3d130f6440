package scheduler

import (
	"fmt"
	"math"
	"strconv"
)

// InputError is a mistake in what the user wrote. Attribute names the Terraform attribute to
// blame ("annotations", "plugin_config", "plugin_config_yaml", "vmid", "node", "storage", ...);
// Key narrows it down (an annotation key, a plugin name).
type InputError struct {
	Attribute string
	Key       string
	Message   string
	// Cluster says that the cluster's state, not the configuration alone, makes the input
	// wrong (a pinned VMID another guest holds): terraform destroy, which plans the
	// configuration first, meets it too.
	Cluster bool
}

func (e *InputError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("%s[%q]: %s", e.Attribute, e.Key, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Attribute, e.Message)
}

// UnschedulableError says that the cluster as it is cannot take a request: no node fits, or no
// VMID is free. Candidates carries every node's verdict when nodes were evaluated.
type UnschedulableError struct {
	Request    string
	Message    string
	Candidates []Candidate
}

func (e *UnschedulableError) Error() string {
	if e.Request != "" {
		return fmt.Sprintf("cannot place %q: %s", e.Request, e.Message)
	}
	return e.Message
}

func itoa(i int) string { return strconv.Itoa(i) }

// FormatNumber prints a float without a trailing ".0" or exponent: 4, 4.25, 1.5.
func FormatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// FormatGiB writes bytes as GiB, to two decimals at most.
func FormatGiB(bytes uint64) string {
	return FormatNumber(math.Round(float64(bytes)/GiB*100) / 100)
}
