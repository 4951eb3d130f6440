package scheduler

// SetProfile is the pipeline of a set whose requests do not all share one profile (VMs of
// several resource blocks with their own profiles or plugin configs): each request, found by
// its name, is filtered, scored and given its VMID by its own profile, so that Schedule and
// ScheduleSet place the set together, each VM under its own rules. Requests of other names
// use fallback.
func SetProfile(fallback *Profile, byName map[string]*Profile) *Profile {
	p := *fallback
	p.byName = byName
	return &p
}

// of is the profile that decides r.
func (p *Profile) of(r *Request) *Profile {
	if q := p.byName[r.Name]; q != nil {
		return q
	}
	return p
}
