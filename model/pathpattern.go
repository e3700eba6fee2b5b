package model

// Path patterns of HTTP requests: the network pages group requests by domain and path
// pattern, so that /users/8812/orders and /users/9031/orders are one endpoint.
//
// Two steps make a pattern:
//
//  1. SplitURL cuts a URL into its domain and path segments, and NormalizeSegment replaces
//     each segment that is plainly an identifier with "*" (the rules are on NormalizeSegment).
//  2. PathPatterns, per domain, keeps a trie of the normalised paths seen. A position (a node
//     of the trie: the same domain and the same prefix of pattern segments) whose literal
//     values reach CollapseAt distinct ones collapses: its literal children merge into its "*"
//     child, and every later value at that position, known or new, maps to "*".
//
// Order: the trie after a set of paths is added does not depend on the order they were added
// in, nor on how the set was split between PathPatterns that were then merged (Merge is
// commutative and associative). It equals this top-down definition: at the root of a domain,
// the position collapses when the first segments of its paths hold CollapseAt or more distinct
// literal values; the paths then continue below "*" (collapsed) or below their own value, and
// each child position is decided the same way from the paths that reach it. Incrementally,
// collapses only ever grow (more paths never un-collapse a position) and a merged child keeps
// its collapse, which is why the result is the same.
//
// What does depend on order is the pattern Add returns for one request: it is the pattern as
// the trie stood once that request was added, so the first requests of an endpoint get their
// literal path (a small app sees its endpoints at once) and, once the position collapses, later
// ones get "*". Readers that want one answer for all requests map each stored path through the
// final trie with Pattern instead of trusting the pattern recorded at arrival.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// CollapseAt is how many distinct literal values one path position may reach before it
// collapses to "*".
const CollapseAt = 10

// PatternStar is the segment that stands for any value.
const PatternStar = "*"

// SplitURL returns a URL's domain (its host, port included, lowercased; empty for a URL
// without one, such as the bare "msr" some SDKs send) and the segments of its path, escaped as
// in the URL, without the query and fragment. Empty segments (a trailing slash, "//") are
// dropped, so "/a/", "/a" and "a" are the same path. Segments are not yet normalised. A URL
// that does not parse is taken as a path: everything before '?' or '#'.
func SplitURL(raw string) (domain string, segments []string) {
	path := raw
	if u, err := url.Parse(raw); err == nil {
		domain = strings.ToLower(u.Host)
		path = u.EscapedPath()
		if u.Opaque != "" { // "mailto:x", "host:8080/x" without a scheme
			path = u.Opaque
		}
	} else if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	for s := range strings.SplitSeq(path, "/") {
		if s != "" {
			segments = append(segments, s)
		}
	}
	return domain, segments
}

// NormalizeSegment returns "*" for a segment that is an identifier rather than a name, and the
// segment itself otherwise. A segment is an identifier when it is
//
//   - a UUID: 8-4-4-4-12 hexadecimal digits of either case;
//   - a hash: 16 or more hexadecimal digits and nothing else, of either case (MD5 32,
//     SHA-1 40, SHA-256 64, object ids 24, trace ids 16 and 32);
//   - an ISO 8601 date or date-time: it starts with YYYY-MM-DD, or is a time hh:mm or hh:mm:ss
//     with optional fraction and zone (the digit rule catches these too; they are named for
//     clarity);
//   - a 0x hexadecimal number: "0x" or "0X" followed by one or more hexadecimal digits;
//   - any segment holding two or more consecutive ASCII digits ("v10", "id42", "2024");
//   - a number: ASCII digits only, even a single one ("1"). This goes beyond the two-digit rule
//     on purpose: /products/1 and /products/12 are the same endpoint.
//
// Everything else stays, in particular names with one digit between letters: "v1", "v2",
// "oauth2", "2fa", "s3", "api", "e-mail". "*" itself stays "*". Segments are judged as escaped
// in the URL: "%93" holds two digits, so a segment with that escape becomes "*".
func NormalizeSegment(s string) string {
	if s == "" {
		return s
	}
	if isUUID(s) || isHash(s) || isISOTime(s) || isHex0x(s) || hasTwoDigits(s) || isDigits(s) {
		return PatternStar
	}
	return s
}

// NormalizePath applies NormalizeSegment to every segment, in place, and returns segs.
func NormalizePath(segs []string) []string {
	for i, s := range segs {
		segs[i] = NormalizeSegment(s)
	}
	return segs
}

// PatternString joins pattern segments into a path: "/" and the segments separated by "/";
// "/" for none.
func PatternString(segs []string) string {
	return "/" + strings.Join(segs, "/")
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
		} else if !isHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHash(s string) bool { return len(s) >= 16 && allHex(s) }

func isHex0x(s string) bool {
	return len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && allHex(s[2:])
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func hasTwoDigits(s string) bool {
	for i := 1; i < len(s); i++ {
		if isDigit(s[i]) && isDigit(s[i-1]) {
			return true
		}
	}
	return false
}

// digitsAt reports whether s has ASCII digits at the positions where pat has 'D' and the same
// bytes elsewhere, over pat's length.
func digitsAt(s, pat string) bool {
	if len(s) < len(pat) {
		return false
	}
	for i := 0; i < len(pat); i++ {
		if pat[i] == 'D' {
			if !isDigit(s[i]) {
				return false
			}
		} else if s[i] != pat[i] {
			return false
		}
	}
	return true
}

func isISOTime(s string) bool {
	return digitsAt(s, "DDDD-DD-DD") || digitsAt(s, "DD:DD") && (len(s) == 5 || s[5] == ':' || s[5] == 'Z' || s[5] == '+' || s[5] == '-')
}

// PathPatterns is the incremental pattern trie of one app's HTTP requests, per domain. The zero
// value is empty and ready; it is not safe for concurrent use (the app actor owns it).
type PathPatterns struct {
	domains map[string]*pathNode
}

// pathNode is one path position: the values seen at the next position below it.
type pathNode struct {
	lit       map[string]*pathNode // literal next segments; nil once collapsed
	star      *pathNode            // the "*" next segment
	collapsed bool                 // every next segment maps to star
	end       bool                 // a path ends here
}

// Add records a request's path (segments as SplitURL returns them; they are normalised here,
// the slice is left untouched) under domain and returns its pattern segments as the trie stands
// after it (see the package comment of this file on order).
func (p *PathPatterns) Add(domain string, segs []string) []string {
	if p.domains == nil {
		p.domains = map[string]*pathNode{}
	}
	root := p.domains[domain]
	if root == nil {
		root = &pathNode{}
		p.domains[domain] = root
	}
	out := make([]string, 0, len(segs))
	n := root
	for _, raw := range segs {
		s := NormalizeSegment(raw)
		if s == PatternStar || n.collapsed {
			n = n.starChild()
			out = append(out, PatternStar)
			continue
		}
		c := n.lit[s]
		if c == nil {
			c = &pathNode{}
			if n.lit == nil {
				n.lit = map[string]*pathNode{}
			}
			n.lit[s] = c
			if len(n.lit) >= CollapseAt {
				n.collapse()
				n = n.star
				out = append(out, PatternStar)
				continue
			}
		}
		n = c
		out = append(out, s)
	}
	n.end = true
	return out
}

// Pattern maps a path onto the trie without changing it: at each position the segment's
// normalised value when the trie has it, "*" when the position collapsed or the value is "*",
// and the normalised value itself below a position the trie does not know.
func (p *PathPatterns) Pattern(domain string, segs []string) []string {
	out := make([]string, 0, len(segs))
	n := p.domains[domain]
	for _, raw := range segs {
		s := NormalizeSegment(raw)
		switch {
		case n == nil:
		case s == PatternStar || n.collapsed:
			s, n = PatternStar, n.star
		default:
			n = n.lit[s]
		}
		out = append(out, s)
	}
	return out
}

// Domains lists the domains seen, ascending.
func (p *PathPatterns) Domains() []string {
	ds := make([]string, 0, len(p.domains))
	for d := range p.domains {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds
}

// Patterns lists the patterns of a domain's paths (PatternString of each path that ends in the
// trie), ascending.
func (p *PathPatterns) Patterns(domain string) []string {
	var out []string
	var walk func(n *pathNode, prefix []string)
	walk = func(n *pathNode, prefix []string) {
		if n.end {
			out = append(out, PatternString(prefix))
		}
		for s, c := range n.lit {
			walk(c, append(prefix, s))
		}
		if n.star != nil {
			walk(n.star, append(prefix, PatternStar))
		}
	}
	if root := p.domains[domain]; root != nil {
		walk(root, nil)
	}
	slices.Sort(out)
	return out
}

// Merge adds everything of o to p, as if every path added to o had been added to p; o is not
// changed and shares nothing with p afterwards.
func (p *PathPatterns) Merge(o *PathPatterns) {
	for d, src := range o.domains {
		if p.domains == nil {
			p.domains = map[string]*pathNode{}
		}
		dst := p.domains[d]
		if dst == nil {
			dst = &pathNode{}
			p.domains[d] = dst
		}
		dst.merge(src)
	}
}

func (n *pathNode) starChild() *pathNode {
	if n.star == nil {
		n.star = &pathNode{}
	}
	return n.star
}

// collapse folds every literal child into the star child.
func (n *pathNode) collapse() {
	n.collapsed = true
	st := n.starChild()
	lit := n.lit
	n.lit = nil
	for _, c := range lit {
		st.mergeOwned(c)
	}
}

// merge adds a copy of src's paths (and collapses) to n.
func (n *pathNode) merge(src *pathNode) { n.mergeOwned(src.clone()) }

// mergeOwned adds src's paths and collapses to n, taking src's nodes over.
func (n *pathNode) mergeOwned(src *pathNode) {
	n.end = n.end || src.end
	if src.collapsed && !n.collapsed {
		n.collapse()
	}
	for s, c := range src.lit {
		switch {
		case n.collapsed:
			n.starChild().mergeOwned(c)
		case n.lit[s] != nil:
			n.lit[s].mergeOwned(c)
		default:
			if n.lit == nil {
				n.lit = map[string]*pathNode{}
			}
			n.lit[s] = c
		}
	}
	if src.star != nil {
		if n.star == nil {
			n.star = src.star
		} else {
			n.star.mergeOwned(src.star)
		}
	}
	if !n.collapsed && len(n.lit) >= CollapseAt {
		n.collapse()
	}
}

func (n *pathNode) clone() *pathNode {
	c := &pathNode{collapsed: n.collapsed, end: n.end}
	if n.lit != nil {
		c.lit = make(map[string]*pathNode, len(n.lit))
		for s, x := range n.lit {
			c.lit[s] = x.clone()
		}
	}
	if n.star != nil {
		c.star = n.star.clone()
	}
	return c
}

// Persistence. AppendBinary encodes the trie deterministically (domains and literal values in
// ascending order), so equal tries encode to equal bytes; UnmarshalPathPatterns reads it back.
//
//	version byte (1) | uvarint domain count | per domain: string, node
//	node: flags byte (1 end, 2 collapsed, 4 has star) | uvarint literal count |
//	      per literal: string, node | star node when flagged
//	string: uvarint length, bytes

const pathPatternsV1 = 1

// maxPatternDepth bounds the nesting UnmarshalPathPatterns accepts.
const maxPatternDepth = 512

// ErrPathPatterns is returned for bytes that are not an encoded PathPatterns.
var ErrPathPatterns = errors.New("model: corrupt path patterns")

// AppendBinary appends the encoding of p to b.
func (p *PathPatterns) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, pathPatternsV1)
	b = binary.AppendUvarint(b, uint64(len(p.domains)))
	for _, d := range p.Domains() {
		b = binary.AppendUvarint(b, uint64(len(d)))
		b = append(b, d...)
		b = p.domains[d].appendBinary(b)
	}
	return b, nil
}

func (n *pathNode) appendBinary(b []byte) []byte {
	var f byte
	if n.end {
		f |= 1
	}
	if n.collapsed {
		f |= 2
	}
	if n.star != nil {
		f |= 4
	}
	b = append(b, f)
	keys := make([]string, 0, len(n.lit))
	for s := range n.lit {
		keys = append(keys, s)
	}
	slices.Sort(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, s := range keys {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
		b = n.lit[s].appendBinary(b)
	}
	if n.star != nil {
		b = n.star.appendBinary(b)
	}
	return b
}

// UnmarshalPathPatterns decodes what AppendBinary wrote.
func UnmarshalPathPatterns(b []byte) (*PathPatterns, error) {
	d := ppDecoder{b: b}
	if d.byte() != pathPatternsV1 {
		return nil, fmt.Errorf("%w: unknown version", ErrPathPatterns)
	}
	p := &PathPatterns{domains: map[string]*pathNode{}}
	for n := d.count(); n > 0 && d.err == nil; n-- {
		dom := d.str()
		p.domains[dom] = d.node(0)
	}
	if d.err == nil && d.i != len(d.b) {
		d.err = errors.New("trailing bytes")
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPathPatterns, d.err)
	}
	return p, nil
}

type ppDecoder struct {
	b   []byte
	i   int
	err error
}

func (d *ppDecoder) fail(msg string) {
	if d.err == nil {
		d.err = errors.New(msg)
	}
}

func (d *ppDecoder) byte() byte {
	if d.err != nil || d.i >= len(d.b) {
		d.fail("truncated")
		return 0
	}
	d.i++
	return d.b[d.i-1]
}

// count reads a length that cannot exceed the bytes left (each counted item takes one byte at
// least), so a corrupt length cannot make the decoder allocate much.
func (d *ppDecoder) count() int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 || v > uint64(len(d.b)-d.i-n) {
		d.fail("bad length")
		return 0
	}
	d.i += n
	return int(v)
}

func (d *ppDecoder) str() string {
	n := d.count()
	if d.err != nil {
		return ""
	}
	s := string(d.b[d.i : d.i+n])
	d.i += n
	return s
}

func (d *ppDecoder) node(depth int) *pathNode {
	if depth > maxPatternDepth {
		d.fail("too deep")
		return &pathNode{}
	}
	f := d.byte()
	if f&^7 != 0 {
		d.fail("bad flags")
	}
	n := &pathNode{end: f&1 != 0, collapsed: f&2 != 0}
	if k := d.count(); k > 0 {
		n.lit = make(map[string]*pathNode, k)
		for ; k > 0 && d.err == nil; k-- {
			s := d.str()
			n.lit[s] = d.node(depth + 1)
		}
	}
	if f&4 != 0 && d.err == nil {
		n.star = d.node(depth + 1)
	}
	return n
}
