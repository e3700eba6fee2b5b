package model

import (
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The ud_expression query parameter filters on user-defined attributes. The dashboard spec
// leaves its structure out; this is the reference system's, which dashboards send:
//
//	{"and": [node, ...]}   every child matches
//	{"or":  [node, ...]}   at least one child matches
//	{"cmp": {"key": "plan", "type": "string", "op": "eq", "value": "pro"}}
//
// A node has exactly one of the three members. "value" is a JSON string holding the value's
// text ("42", "1.5", "true"); a JSON number or boolean is accepted too. Unlike the reference,
// "and" means and (docs/architecture.md, "Algorithms").

// Limits of a ud_expression.
const (
	MaxUDExprDepth = 8     // nesting levels; a lone cmp is 1, and:[cmp] is 2
	MaxUDExprNodes = 64    // and, or and cmp nodes together
	MaxUDExprBytes = 16384 // length of the JSON text
)

// ErrUDExpr is what every ud_expression parse error matches with errors.Is.
var ErrUDExpr = errors.New("invalid ud_expression")

// UDExprError says where and why a ud_expression is invalid, in words meant for the person
// who wrote it (the dashboard returns it as a 400).
type UDExprError struct {
	Path   string // e.g. "and[1].cmp.op"; empty for the whole expression
	Reason string
}

func (e *UDExprError) Error() string {
	if e.Path == "" {
		return "ud_expression: " + e.Reason
	}
	return "ud_expression: " + e.Path + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrUDExpr) true.
func (e *UDExprError) Unwrap() error { return ErrUDExpr }

// UDOp is a comparison operator of a ud_expression cmp.
type UDOp uint8

// The operators of the dashboard spec's operator table.
const (
	UDOpEq UDOp = iota + 1
	UDOpNeq
	UDOpContains
	UDOpStartsWith
	UDOpGt
	UDOpLt
	UDOpGte
	UDOpLte
)

var udOpNames = [...]string{UDOpEq: "eq", UDOpNeq: "neq", UDOpContains: "contains", UDOpStartsWith: "startsWith",
	UDOpGt: "gt", UDOpLt: "lt", UDOpGte: "gte", UDOpLte: "lte"}

// String returns the operator's name in the API.
func (o UDOp) String() string {
	if int(o) < len(udOpNames) && o != 0 {
		return udOpNames[o]
	}
	return "unknown"
}

// udTypeOps is the spec's operator table, in its order.
var udTypeOps = map[UDType][]UDOp{
	UDBool:    {UDOpEq, UDOpNeq},
	UDInt64:   {UDOpEq, UDOpNeq, UDOpGt, UDOpLt, UDOpGte, UDOpLte},
	UDFloat64: {UDOpEq, UDOpNeq, UDOpGt, UDOpLt, UDOpGte, UDOpLte},
	UDString:  {UDOpEq, UDOpNeq, UDOpContains, UDOpStartsWith},
}

// OperatorTypes is ud_attrs.operator_types of GET /filters: the operators allowed per type. The
// caller owns the returned map.
func OperatorTypes() map[string][]string {
	m := make(map[string][]string, len(udTypeOps))
	for t, ops := range udTypeOps {
		names := make([]string, len(ops))
		for i, o := range ops {
			names[i] = o.String()
		}
		m[t.String()] = names
	}
	return m
}

// UDExpr is one node of a parsed, valid ud_expression: exactly one of And, Or or Cmp is set, and
// And/Or are never empty. The tree is exported so that a query layer can translate it into SQL;
// Eval is the reference semantics any translation must agree with.
type UDExpr struct {
	And []UDExpr
	Or  []UDExpr
	Cmp *UDCmp
}

// UDCmp compares one user-defined attribute with a constant.
//
// Semantics (Eval): the attribute must exist with this Key and a matching type, else the cmp is
// false (neq included). Strings: eq/neq compare exactly; contains and startsWith ignore the case
// of ASCII letters only (like ClickHouse's positionCaseInsensitive and lower()), so every backend
// can give the same answer. bool compares as eq/neq with bool attributes.
//
// Numbers: an int64 or a float64 cmp matches an attribute of either numeric type, and compares
// the two numbers exactly, as mathematical values (never by converting an int64 to float64):
// int64 gt 9223372036854775000 finds the float64 9.223372036854776e+18 (2^63) that ingest keeps
// for an integer beyond int64, float64 eq 42 finds the int64 42, int64 eq 2 finds the float64 2,
// and int64 eq 9007199254740993 does not find the float64 9007199254740992. The type of a cmp
// only says how its constant is written. A string or bool attribute never matches a number.
// OnInt and OnFloat restate a cmp for one attribute type, for translations into SQL.
type UDCmp struct {
	Key  string
	Type UDType
	Op   UDOp
	// Value is the canonical text of the constant, in the form UDAttr.Value uses: the string,
	// a base-10 integer, a float formatted with strconv 'g' -1, or "true"/"false".
	Value string
	Int   int64   // the constant when Type is UDInt64
	Float float64 // the constant when Type is UDFloat64
}

// ParseUDExpr parses and validates a ud_expression. The empty (or all-blank) string means "no
// filter" and returns nil, nil; a nil *UDExpr matches everything. Errors are *UDExprError.
func ParseUDExpr(text string) (*UDExpr, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	if len(text) > MaxUDExprBytes {
		return nil, &UDExprError{Reason: "is " + strconv.Itoa(len(text)) + " bytes long, at most " + strconv.Itoa(MaxUDExprBytes) + " are allowed"}
	}
	p := udParser{s: scanner{buf: []byte(text)}}
	var root UDExpr
	if err := p.node(&root, "", 1); err != nil {
		return nil, err
	}
	if err := p.s.end(); err != nil {
		return nil, p.syntax("", err)
	}
	return &root, nil
}

type udParser struct {
	s     scanner
	nodes int
}

func (p *udParser) syntax(path string, err error) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return &UDExprError{Path: path, Reason: ve.Rule}
	}
	return &UDExprError{Path: path, Reason: "is not valid JSON"}
}

func join(path, member string) string {
	if path == "" {
		return member
	}
	return path + "." + member
}

// node parses one node at path, depth levels deep.
func (p *udParser) node(x *UDExpr, path string, depth int) error {
	where := path
	if where == "" {
		where = "the expression"
	}
	if depth > MaxUDExprDepth {
		return &UDExprError{Path: path, Reason: "nests deeper than " + strconv.Itoa(MaxUDExprDepth) + " levels"}
	}
	if p.nodes++; p.nodes > MaxUDExprNodes {
		return &UDExprError{Path: path, Reason: "the expression has more than " + strconv.Itoa(MaxUDExprNodes) + " and/or/cmp nodes"}
	}
	if p.s.peek() != '{' {
		if err := p.s.skip(); err != nil {
			return p.syntax(path, err)
		}
		return &UDExprError{Path: path, Reason: `must be an object with one of "and", "or" or "cmp"`}
	}
	members := 0
	var inner error
	err := p.s.object(func(key []byte, s *scanner) error {
		members++
		name := string(key)
		if members > 1 {
			inner = &UDExprError{Path: path, Reason: `must have exactly one of "and", "or" or "cmp", found another member "` + name + `"`}
			return inner
		}
		switch name {
		case "and", "or":
			list, err := p.list(join(path, name), depth)
			if err != nil {
				inner = err
				return err
			}
			if name == "and" {
				x.And = list
			} else {
				x.Or = list
			}
		case "cmp":
			x.Cmp = new(UDCmp)
			if err := p.cmp(x.Cmp, join(path, "cmp")); err != nil {
				inner = err
				return err
			}
		default:
			inner = &UDExprError{Path: path, Reason: "unknown member " + clipValue(key) + `; a node has one of "and", "or" or "cmp"`}
			return inner
		}
		return nil
	})
	if inner != nil {
		return inner
	}
	if err != nil {
		return p.syntax(path, err)
	}
	if members == 0 {
		return &UDExprError{Path: path, Reason: where + ` is empty; it needs one of "and", "or" or "cmp"`}
	}
	return nil
}

// list parses the array of an and/or node.
func (p *udParser) list(path string, depth int) ([]UDExpr, error) {
	if p.s.peek() != '[' {
		if err := p.s.skip(); err != nil {
			return nil, p.syntax(path, err)
		}
		return nil, &UDExprError{Path: path, Reason: "must be an array of nodes"}
	}
	var out []UDExpr
	var inner error
	err := p.s.array(func(i int, s *scanner) error {
		out = append(out, UDExpr{})
		inner = p.node(&out[len(out)-1], path+"["+strconv.Itoa(i)+"]", depth+1)
		return inner
	})
	if inner != nil {
		return nil, inner
	}
	if err != nil {
		return nil, p.syntax(path, err)
	}
	if len(out) == 0 {
		return nil, &UDExprError{Path: path, Reason: "must hold at least one node"}
	}
	return out, nil
}

// cmp parses and validates a cmp object.
func (p *udParser) cmp(c *UDCmp, path string) error {
	if p.s.peek() != '{' {
		if err := p.s.skip(); err != nil {
			return p.syntax(path, err)
		}
		return &UDExprError{Path: path, Reason: `must be an object with "key", "type", "op" and "value"`}
	}
	var key, typ, op, value string
	var has [4]bool
	var valueKind byte // '"' string, 'n' number, 'b' boolean
	var inner error
	fail := func(member, reason string) error {
		p := path
		if member != "" {
			p = join(path, member)
		}
		inner = &UDExprError{Path: p, Reason: reason}
		return inner
	}
	err := p.s.object(func(k []byte, s *scanner) error {
		name := string(k)
		i := -1
		switch name {
		case "key":
			i = 0
		case "type":
			i = 1
		case "op":
			i = 2
		case "value":
			i = 3
		default:
			return fail("", "unknown member "+clipValue(k)+`; a cmp has "key", "type", "op" and "value"`)
		}
		if has[i] {
			return fail(name, "appears more than once")
		}
		has[i] = true
		switch c := s.peek(); {
		case c == '"':
			raw, esc, err := s.str()
			if err != nil {
				return err
			}
			v := rawStr{raw, esc}.String()
			switch i {
			case 0:
				key = v
			case 1:
				typ = v
			case 2:
				op = v
			case 3:
				value, valueKind = v, '"'
			}
		case i == 3 && (c == 't' || c == 'f'):
			v, _, err := readBool(s)
			if err != nil {
				return err
			}
			value, valueKind = strconv.FormatBool(v), 'b'
		case i == 3 && isNumStart(c):
			raw, _, err := s.num()
			if err != nil {
				return err
			}
			value, valueKind = string(raw), 'n'
		default:
			kind := s.kindOf()
			if err := s.skip(); err != nil {
				return err
			}
			if i == 3 {
				return fail(name, "must be a string, number or boolean, got "+kind)
			}
			return fail(name, "must be a string, got "+kind)
		}
		return nil
	})
	if inner != nil {
		return inner
	}
	if err != nil {
		return p.syntax(path, err)
	}
	for i, name := range [...]string{"key", "type", "op", "value"} {
		if !has[i] {
			return &UDExprError{Path: join(path, name), Reason: "is required"}
		}
	}
	// key: the rules of ingest's user-defined attribute keys.
	if key == "" || len(key) > MaxUDKeyLen {
		return &UDExprError{Path: join(path, "key"), Reason: "must be 1 to " + strconv.Itoa(MaxUDKeyLen) + " characters long"}
	}
	for i := 0; i < len(key); i++ {
		if !udKeyChar[key[i]] {
			return &UDExprError{Path: join(path, "key"), Reason: strconv.Quote(key) + " may hold only letters, digits, '_' and '-'"}
		}
	}
	t, ok := ParseUDType(typ)
	if !ok {
		return &UDExprError{Path: join(path, "type"), Reason: strconv.Quote(typ) + " is not a type; use one of bool, int64, float64, string"}
	}
	allowed := udTypeOps[t]
	var o UDOp
	for _, a := range allowed {
		if a.String() == op {
			o = a
		}
	}
	if o == 0 {
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = a.String()
		}
		return &UDExprError{Path: join(path, "op"), Reason: "operator " + strconv.Quote(op) + " is not allowed for type " + t.String() + "; use one of " + strings.Join(names, ", ")}
	}
	*c = UDCmp{Key: key, Type: t, Op: o}
	bad := func(want string) error {
		return &UDExprError{Path: join(path, "value"), Reason: clipValue([]byte(value)) + " is not " + want}
	}
	switch t {
	case UDString:
		if valueKind != '"' {
			return bad("a string (write it in quotes)")
		}
		if n := utf8.RuneCountInString(value); n > MaxUDStringLen {
			return &UDExprError{Path: join(path, "value"), Reason: "must be at most " + strconv.Itoa(MaxUDStringLen) + " characters, is " + strconv.Itoa(n)}
		}
		c.Value = value
	case UDBool:
		if value != "true" && value != "false" || valueKind == 'n' {
			return bad(`a bool: use "true" or "false"`)
		}
		c.Value = value
	case UDInt64:
		if valueKind == 'b' {
			return bad("an int64")
		}
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return bad("an int64 (a whole number from -9223372036854775808 to 9223372036854775807)")
		}
		c.Int, c.Value = v, strconv.FormatInt(v, 10)
	case UDFloat64:
		if valueKind == 'b' {
			return bad("a float64")
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return bad("a finite float64")
		}
		if v == 0 {
			v = 0 // -0 compares equal anyway; keep one canonical text
		}
		c.Float, c.Value = v, strconv.FormatFloat(v, 'g', -1, 64)
	}
	return nil
}

// Eval reports whether attributes (sorted by key, as Event.UserDefined and Span.UserDefined
// are) satisfy the expression. A nil expression is true.
func (x *UDExpr) Eval(attrs []UDAttr) bool {
	if x == nil {
		return true
	}
	switch {
	case x.Cmp != nil:
		return x.Cmp.Eval(attrs)
	case x.And != nil:
		for i := range x.And {
			if !x.And[i].Eval(attrs) {
				return false
			}
		}
		return true
	default:
		for i := range x.Or {
			if x.Or[i].Eval(attrs) {
				return true
			}
		}
		return false
	}
}

// Eval applies the comparison to attributes sorted by key (see UDCmp for the semantics).
func (c *UDCmp) Eval(attrs []UDAttr) bool {
	i := sort.Search(len(attrs), func(i int) bool { return attrs[i].Key >= c.Key })
	if i == len(attrs) || attrs[i].Key != c.Key {
		return false
	}
	v, t := attrs[i].Value, attrs[i].Type
	if t != c.Type {
		if !isNumber(t) || !isNumber(c.Type) {
			return false
		}
		// An int64 cmp on a float64 attribute or the reverse: exact, across the types.
		if t == UDFloat64 {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) {
				return false
			}
			return compareOp(c.Op, cmpFloatInt(f, c.Int))
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		return compareOp(c.Op, -cmpFloatInt(c.Float, n))
	}
	switch c.Type {
	case UDString, UDBool:
		switch c.Op {
		case UDOpEq:
			return v == c.Value
		case UDOpNeq:
			return v != c.Value
		case UDOpContains:
			return asciiFoldIndex(v, c.Value) >= 0
		case UDOpStartsWith:
			return len(v) >= len(c.Value) && asciiFoldEqual(v[:len(c.Value)], c.Value)
		}
	case UDInt64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		return compareOp(c.Op, cmp3(n, c.Int))
	case UDFloat64:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return false
		}
		return compareOp(c.Op, cmp3(f, c.Float))
	}
	return false
}

func isNumber(t UDType) bool { return t == UDInt64 || t == UDFloat64 }

// cmpFloatInt compares a float64 (not NaN) with an int64 exactly: -1, 0 or 1.
func cmpFloatInt(f float64, n int64) int {
	switch {
	case f >= 0x1p63:
		return 1
	case f < -0x1p63:
		return -1
	}
	t := math.Trunc(f) // in [-2^63, 2^63): its int64 is exact, and so is f - t
	if c := cmp3(int64(t), n); c != 0 {
		return c
	}
	return cmp3(f-t, 0)
}

// OnInt restates c for an int64 attribute value v: c holds for v exactly when "v op k" does,
// unless always is +1 (it holds for every int64) or -1 (for none). For an int64 cmp it is c's own
// operator and constant; a float64 constant becomes the integer bound that decides the same.
func (c *UDCmp) OnInt() (op UDOp, k int64, always int) {
	if c.Type != UDFloat64 {
		return c.Op, c.Int, 0
	}
	f := c.Float
	if f >= 0x1p63 || f < -0x1p63 { // every int64 is below f, or above it
		below := f > 0
		switch c.Op {
		case UDOpEq:
			return c.Op, 0, -1
		case UDOpNeq:
			return c.Op, 0, 1
		case UDOpLt, UDOpLte:
			return c.Op, 0, boolSign(below)
		default: // gt, gte
			return c.Op, 0, boolSign(!below)
		}
	}
	fl := math.Floor(f)
	k = int64(fl) // exact: fl is in [-2^63, 2^63)
	if fl == f {
		return c.Op, k, 0
	}
	// fl < f < fl+1: no int64 equals f, v > f ⇔ v > fl, v < f ⇔ v ≤ fl.
	switch c.Op {
	case UDOpEq:
		return c.Op, 0, -1
	case UDOpNeq:
		return c.Op, 0, 1
	case UDOpGt, UDOpGte:
		return UDOpGt, k, 0
	default: // lt, lte
		return UDOpLte, k, 0
	}
}

// OnFloat restates c for a float64 attribute value v (not NaN), as OnInt does for int64: an int64
// constant that float64 cannot hold becomes the nearest float64 on the side that decides the
// same (v > 2^53+1 ⇔ v ≥ 2^53+2).
func (c *UDCmp) OnFloat() (op UDOp, k float64, always int) {
	if c.Type != UDInt64 {
		return c.Op, c.Float, 0
	}
	n := c.Int
	f := float64(n)
	if cmpFloatInt(f, n) == 0 {
		return c.Op, f, 0
	}
	lo, hi := f, math.Nextafter(f, math.Inf(1)) // the doubles around n
	if cmpFloatInt(f, n) > 0 {
		lo, hi = math.Nextafter(f, math.Inf(-1)), f
	}
	switch c.Op {
	case UDOpEq:
		return c.Op, 0, -1
	case UDOpNeq:
		return c.Op, 0, 1
	case UDOpGt, UDOpGte:
		return UDOpGte, hi, 0
	default: // lt, lte
		return UDOpLte, lo, 0
	}
}

func boolSign(b bool) int {
	if b {
		return 1
	}
	return -1
}

func cmp3[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareOp(op UDOp, c int) bool {
	switch op {
	case UDOpEq:
		return c == 0
	case UDOpNeq:
		return c != 0
	case UDOpGt:
		return c > 0
	case UDOpLt:
		return c < 0
	case UDOpGte:
		return c >= 0
	case UDOpLte:
		return c <= 0
	}
	return false
}

func asciiLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// asciiFoldEqual compares byte strings of equal length, ignoring the case of ASCII letters.
func asciiFoldEqual(a, b string) bool {
	for i := 0; i < len(a); i++ {
		if asciiLower(a[i]) != asciiLower(b[i]) {
			return false
		}
	}
	return true
}

// asciiFoldIndex is strings.Index ignoring the case of ASCII letters (values are at most 256
// characters, so the simple search is enough).
func asciiFoldIndex(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if asciiFoldEqual(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// MarshalJSON writes the expression in its canonical form: the tree as parsed, with values as
// their canonical text in JSON strings. Equal filters give equal text (short filter codes rely
// on that), and ParseUDExpr reads it back to an equal tree.
func (x UDExpr) MarshalJSON() ([]byte, error) {
	return x.appendJSON(nil), nil
}

func (x *UDExpr) appendJSON(b []byte) []byte {
	switch {
	case x == nil:
		return append(b, "null"...)
	case x.Cmp != nil:
		c := x.Cmp
		b = append(b, `{"cmp":{"key":`...)
		b = appendJSONString(b, c.Key)
		b = append(b, `,"type":"`...)
		b = append(b, c.Type.String()...)
		b = append(b, `","op":"`...)
		b = append(b, c.Op.String()...)
		b = append(b, `","value":`...)
		b = appendJSONString(b, c.Value)
		return append(b, "}}"...)
	default:
		list, name := x.And, `{"and":[`
		if list == nil {
			list, name = x.Or, `{"or":[`
		}
		b = append(b, name...)
		for i := range list {
			if i > 0 {
				b = append(b, ',')
			}
			b = list[i].appendJSON(b)
		}
		return append(b, "]}"...)
	}
}

// appendJSONString appends s as a JSON string (strconv.Quote's escapes are not all JSON).
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
