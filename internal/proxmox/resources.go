package proxmox

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// resource is one /cluster/resources row: the fields this provider uses, nothing else.
type resource struct {
	Type, Node, Status, Name string
	VMID                     int
	MaxCPU, CPU              float64
	MaxMem, Mem              uint64
	MaxDisk, Disk            uint64
	Template, Shared         bool
	Tags, Pool, Lock         string
	Storage, Content         string
	HAState, Arch            string
}

// decodeResources reads a /cluster/resources answer, {"data":[row, ...]}, calling row for each
// row (the pointer is reused: copy what is kept). On a 64-node, 10,000-guest cluster the answer
// is megabytes; encoding/json spent most of a snapshot's client time on it (reflection, every
// key matched case-insensitively, every value decoded whether used or not), so rows are
// scanned by hand: known keys are matched exactly, numbers are parsed only once the row's type
// says they are used, other values are skipped, and the strings that repeat in every row
// (node, type, status, ...) are shared.
func decodeResources(body []byte, row func(*resource)) error {
	d := resourceDecoder{buf: body, strs: map[string]string{}}
	if err := d.envelope(row); err != nil {
		return fmt.Errorf("decode /cluster/resources: %w", err)
	}
	return nil
}

type resourceDecoder struct {
	buf  []byte
	pos  int
	strs map[string]string // interned strings
}

// numbers holds a row's numeric values unparsed until the row is complete.
type numbers struct{ vmid, maxcpu, cpu, maxmem, mem, maxdisk, disk, template, shared []byte }

func (d *resourceDecoder) envelope(row func(*resource)) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	found := false
	err := d.members(func(key []byte) error {
		if string(key) != "data" {
			return d.skip()
		}
		found = true
		return d.rows(row)
	})
	if err != nil {
		return err
	}
	if d.ws(); d.pos != len(d.buf) {
		return d.errorf("unexpected data after the answer")
	}
	if !found {
		return d.errorf(`no "data" in the answer`)
	}
	return nil
}

func (d *resourceDecoder) rows(row func(*resource)) error {
	if d.literal("null") {
		return nil
	}
	if err := d.expect('['); err != nil {
		return err
	}
	var r resource
	return d.elements(func() error {
		r = resource{}
		if err := d.row(&r); err != nil {
			return err
		}
		row(&r)
		return nil
	})
}

func (d *resourceDecoder) row(r *resource) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	var n numbers
	err := d.members(func(key []byte) error {
		var s *string
		var num *[]byte
		interned := true
		switch string(key) {
		case "type":
			s = &r.Type
		case "node":
			s = &r.Node
		case "status":
			s = &r.Status
		case "name":
			s, interned = &r.Name, false
		case "tags":
			s = &r.Tags
		case "pool":
			s = &r.Pool
		case "lock":
			s = &r.Lock
		case "storage":
			s = &r.Storage
		case "content":
			s = &r.Content
		case "hastate":
			s = &r.HAState
		case "host-arch":
			s = &r.Arch
		case "vmid":
			num = &n.vmid
		case "maxcpu":
			num = &n.maxcpu
		case "cpu":
			num = &n.cpu
		case "maxmem":
			num = &n.maxmem
		case "mem":
			num = &n.mem
		case "maxdisk":
			num = &n.maxdisk
		case "disk":
			num = &n.disk
		case "template":
			num = &n.template
		case "shared":
			num = &n.shared
		default:
			return d.skip()
		}
		if s != nil {
			return d.stringValue(s, interned)
		}
		return d.numberValue(num)
	})
	if err != nil {
		return err
	}
	return n.parse(r)
}

// parse converts the numbers a row of its type uses.
func (n *numbers) parse(r *resource) error {
	p := numberParser{r: r}
	switch r.Type {
	case "node":
		r.MaxCPU, r.CPU = p.float("maxcpu", n.maxcpu), p.float("cpu", n.cpu)
		r.MaxMem, r.Mem = p.size("maxmem", n.maxmem), p.size("mem", n.mem)
	case "storage":
		r.MaxDisk, r.Disk = p.size("maxdisk", n.maxdisk), p.size("disk", n.disk)
		r.Shared = p.float("shared", n.shared) == 1
	case "qemu", "lxc":
		if n.vmid != nil && (!isDigits(n.vmid) || len(n.vmid) > 9) {
			return fmt.Errorf("row %s/%s: vmid %s is not a VM ID", r.Type, r.Node, n.vmid)
		}
		r.VMID = int(p.size("vmid", n.vmid))
		r.MaxCPU, r.MaxMem = p.float("maxcpu", n.maxcpu), p.size("maxmem", n.maxmem)
		r.Template = p.float("template", n.template) == 1
	}
	return p.err
}

// numberParser parses a row's numbers, keeping the first error.
type numberParser struct {
	r   *resource
	err error
}

func (p *numberParser) float(name string, raw []byte) float64 {
	if raw == nil || p.err != nil {
		return 0
	}
	if isDigits(raw) && len(raw) < 16 {
		return float64(digitsValue(raw))
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		p.err = fmt.Errorf("row %s/%s: %s %s is not a number", p.r.Type, p.r.Node, name, raw)
	}
	return v
}

// size reads a byte count; a fraction is truncated, a negative value refused.
func (p *numberParser) size(name string, raw []byte) uint64 {
	if isDigits(raw) && len(raw) < 20 {
		return digitsValue(raw)
	}
	v := p.float(name, raw)
	if p.err == nil && (v < 0 || v >= 1<<64) {
		p.err = fmt.Errorf("row %s/%s: %s %s is out of range", p.r.Type, p.r.Node, name, raw)
	}
	if p.err != nil {
		return 0
	}
	return uint64(v)
}

func digitsValue(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v*10 + uint64(c-'0')
	}
	return v
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// members walks an object's members after its '{', calling value for each key with the
// position at the value, up to and including the '}'.
func (d *resourceDecoder) members(value func(key []byte) error) error {
	return d.sequence('}', func() error {
		key, err := d.rawString()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		d.ws()
		return value(key)
	})
}

// elements walks a list's elements after its '[', calling each with the position at the
// element, up to and including the ']'.
func (d *resourceDecoder) elements(each func() error) error { return d.sequence(']', each) }

// sequence walks comma-separated items up to and including end.
func (d *resourceDecoder) sequence(end byte, item func() error) error {
	if d.ws(); d.peek() == end {
		d.pos++
		return nil
	}
	for {
		d.ws()
		if err := item(); err != nil {
			return err
		}
		d.ws()
		switch d.next() {
		case ',':
		case end:
			return nil
		default:
			return d.errorf("expected , or %c", end)
		}
	}
}

// stringValue reads a string (or null, leaving dst alone) into dst.
func (d *resourceDecoder) stringValue(dst *string, intern bool) error {
	if d.literal("null") {
		return nil
	}
	start := d.pos
	raw, err := d.rawString()
	if err != nil {
		return err
	}
	if !plain(raw) {
		// Escapes or invalid UTF-8: rare, so leave them to encoding/json.
		return json.Unmarshal(d.buf[start:d.pos], dst)
	}
	if !intern {
		*dst = string(raw)
		return nil
	}
	if s, ok := d.strs[string(raw)]; ok {
		*dst = s
		return nil
	}
	*dst = string(raw)
	d.strs[*dst] = *dst
	return nil
}

// plain tells that a string's content needs no decoding: no escapes, ASCII only.
func plain(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// numberValue keeps a number's text, or a string's content (older PVE quoted some numbers);
// null leaves dst nil.
func (d *resourceDecoder) numberValue(dst *[]byte) error {
	switch c := d.peek(); {
	case c == '"':
		raw, err := d.rawString()
		*dst = raw
		return err
	case d.literal("null"):
		return nil
	default:
		start := d.pos
		if err := d.number(); err != nil {
			return err
		}
		*dst = d.buf[start:d.pos]
		return nil
	}
}

// rawString reads a string and returns its content, escapes undecoded.
func (d *resourceDecoder) rawString() ([]byte, error) {
	if err := d.expect('"'); err != nil {
		return nil, err
	}
	start := d.pos
	for d.pos < len(d.buf) {
		switch c := d.buf[d.pos]; {
		case c == '"':
			d.pos++
			return d.buf[start : d.pos-1], nil
		case c == '\\':
			if d.pos+1 >= len(d.buf) {
				return nil, d.errorf("unterminated string")
			}
			switch d.buf[d.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.pos += 2
			case 'u':
				if d.pos+6 > len(d.buf) || !isHex(d.buf[d.pos+2:d.pos+6]) {
					return nil, d.errorf(`bad \u escape`)
				}
				d.pos += 6
			default:
				return nil, d.errorf("bad escape")
			}
		case c < 0x20:
			return nil, d.errorf("control character in a string")
		default:
			d.pos++
		}
	}
	return nil, d.errorf("unterminated string")
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// number checks a JSON number at pos and moves past it.
func (d *resourceDecoder) number() error {
	start := d.pos
	if d.peek() == '-' {
		d.pos++
	}
	switch {
	case d.peek() == '0':
		d.pos++
	case d.digits() == 0:
		return d.errorf("expected a value")
	}
	if d.peek() == '.' {
		d.pos++
		if d.digits() == 0 {
			return d.errorf("bad number %s", d.buf[start:d.pos])
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.pos++
		if c := d.peek(); c == '+' || c == '-' {
			d.pos++
		}
		if d.digits() == 0 {
			return d.errorf("bad number %s", d.buf[start:d.pos])
		}
	}
	return nil
}

func (d *resourceDecoder) digits() int {
	n := 0
	for d.pos < len(d.buf) && d.buf[d.pos] >= '0' && d.buf[d.pos] <= '9' {
		d.pos++
		n++
	}
	return n
}

// skip moves past any value, checking its syntax.
func (d *resourceDecoder) skip() error {
	switch c := d.peek(); {
	case c == '"':
		_, err := d.rawString()
		return err
	case c == '{':
		d.pos++
		return d.members(func([]byte) error { return d.skip() })
	case c == '[':
		d.pos++
		return d.elements(d.skip)
	case d.literal("true"), d.literal("false"), d.literal("null"):
		return nil
	default:
		return d.number()
	}
}

// literal moves past word if it is next.
func (d *resourceDecoder) literal(word string) bool {
	if len(d.buf)-d.pos >= len(word) && string(d.buf[d.pos:d.pos+len(word)]) == word {
		d.pos += len(word)
		return true
	}
	return false
}

func (d *resourceDecoder) expect(c byte) error {
	d.ws()
	if d.next() != c {
		return d.errorf("expected %q", c)
	}
	return nil
}

func (d *resourceDecoder) ws() {
	for d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *resourceDecoder) peek() byte {
	if d.pos < len(d.buf) {
		return d.buf[d.pos]
	}
	return 0
}

// next returns the byte at pos and moves past it (0 at the end).
func (d *resourceDecoder) next() byte {
	c := d.peek()
	if d.pos < len(d.buf) {
		d.pos++
	}
	return c
}

func (d *resourceDecoder) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", d.pos, fmt.Sprintf(format, args...))
}
