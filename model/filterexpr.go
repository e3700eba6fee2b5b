package model

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
)

// filter_expr is the dashboard's text filter (issue #15; the builds page sends it). Its grammar:
//
//	or        = and { "OR" and }
//	and       = operand { "AND" operand }
//	operand   = "(" or ")" | condition
//	condition = key ":" operator [ ":" values ]
//	values    = value | "[" value { "," value } "]"
//	value     = word | `"` { character | `\"` | `\\` } `"`
//
// AND binds tighter than OR; the keywords are matched without regard to case and must stand
// alone ("android" is a value, not AND followed by "roid"). A word runs up to a space or one of
// : , [ ] ( ) " — so 1.2.0-beta+7 needs no quotes, and a lone value follows its colon with no
// space, which keeps "k:in: AND x:in:1" from reading AND as a value. Positions in messages and
// spans count characters (Unicode code points) from zero, as the dashboard's filter bar does.

// The limits of a filter: its text length bounds the URL that carries it; the others bound the
// query it builds (how deep evaluation recurses, how many predicates, how many arguments one
// predicate binds). The dashboard's filter bar enforces the same numbers.
const (
	FilterExprMaxBytes      = 4 << 10
	FilterExprMaxDepth      = 4
	FilterExprMaxConditions = 32
	FilterExprMaxValues     = 200
)

// The operators of filter conditions.
const (
	FilterIn         = "in"
	FilterNotIn      = "not_in"
	FilterContains   = "contains"
	FilterStartsWith = "starts_with"
	FilterIsSet      = "is_set"
	FilterIsNotSet   = "is_not_set"
)

// The logical operators of filter groups.
const (
	FilterAnd = "and"
	FilterOr  = "or"
)

// FilterExpr is a parsed filter: a group (Logic is FilterAnd or FilterOr, with Children) or a
// condition (Logic is empty). A parenthesised condition is a group of one, so nesting written by
// the user survives formatting.
type FilterExpr struct {
	Logic    string
	Children []FilterExpr
	Cond     FilterCond
}

// FilterCond is one key:operator[:values] condition and where it was written.
type FilterCond struct {
	Key    string
	Op     string
	Values []string
	Span   TextSpan
}

// TextSpan is a stretch of the filter text in characters from zero, End one past the last.
type TextSpan struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// FilterIssue is one thing wrong with a filter; Span is nil for a parse error or an issue of
// the whole filter (a limit).
type FilterIssue struct {
	Message string    `json:"message"`
	Span    *TextSpan `json:"span,omitempty"`
}

// FilterExprError is a filter that cannot be used, with every issue found.
type FilterExprError struct{ Issues []FilterIssue }

func (e *FilterExprError) Error() string {
	switch len(e.Issues) {
	case 0:
		return "invalid filter_expr"
	case 1:
		return e.Issues[0].Message
	}
	return fmt.Sprintf("%s (and %d more issues)", e.Issues[0].Message, len(e.Issues)-1)
}

// FilterKey is a key a filter entity offers, as GET /apps/{id}/filters/keys lists it.
type FilterKey struct {
	Name        string
	Label       string
	Description string
	Group       string
	ValueType   string   // string, enum or uuid
	Operators   []string // the first is the dashboard's default
	Suggestion  string   // full_list, sample or none: how GET /filters/values suggests values
	Enum        []string // the only values of an enum key
}

// FilterEntity is what a filter_expr filters: its keys and the display order of their groups.
type FilterEntity struct {
	Name   string
	Keys   []FilterKey
	Groups []string
}

// Key returns the entity's key of that name.
func (e FilterEntity) Key(name string) (FilterKey, bool) {
	for _, k := range e.Keys {
		if k.Name == name {
			return k, true
		}
	}
	return FilterKey{}, false
}

// BuildsEntity is an app's uploaded builds, one row per mapping file. svc has no patch builds,
// so patch_version and patch_id are never set: they are offered so that filters the dashboard
// writes for the reference system still parse.
var BuildsEntity = FilterEntity{
	Name:   "builds",
	Groups: []string{"Version", "Build"},
	Keys: []FilterKey{
		{Name: "version_name", Label: "App version", Description: "The version name of the build, such as 1.2.0.",
			Group: "Version", ValueType: "string", Operators: []string{FilterIn, FilterNotIn, FilterContains, FilterStartsWith}, Suggestion: "sample"},
		{Name: "version_code", Label: "Build number", Description: "The version code (build number) of the build.",
			Group: "Version", ValueType: "string", Operators: []string{FilterIn, FilterNotIn}, Suggestion: "sample"},
		{Name: "mapping_type", Label: "Mapping type", Description: "The kind of mapping file: ProGuard, dSYM, ELF debug symbols or JS bundle.",
			Group: "Build", ValueType: "enum", Operators: []string{FilterIn, FilterNotIn}, Suggestion: "full_list",
			Enum: []string{"proguard", "dsym", "elf_debug", "jsbundle"}},
		{Name: "patch_version", Label: "Patch version", Description: "The version of a patch build; svc has no patch builds, so it is never set.",
			Group: "Version", ValueType: "string", Operators: []string{FilterIn, FilterNotIn, FilterContains}, Suggestion: "sample"},
		{Name: "patch_id", Label: "Patch id", Description: "The id of a patch build; svc has no patch builds, so it is never set.",
			Group: "Version", ValueType: "uuid", Operators: []string{FilterIn, FilterNotIn, FilterIsSet, FilterIsNotSet}, Suggestion: "sample"},
	},
}

// FilterEntities are the entities a filter_expr may filter, by name.
var FilterEntities = map[string]FilterEntity{BuildsEntity.Name: BuildsEntity}

// ParseFilterExpr reads a filter and checks it against the entity's keys. Errors are a
// *FilterExprError: a text that cannot be read gives one issue without a span naming what was
// found where; a readable one gives an issue per bad condition, with its span, and one without
// a span for a broken limit.
func ParseFilterExpr(text string, e FilterEntity) (*FilterExpr, error) {
	whole := func(format string, a ...any) error {
		return &FilterExprError{Issues: []FilterIssue{{Message: fmt.Sprintf(format, a...)}}}
	}
	if len(text) > FilterExprMaxBytes {
		return nil, whole("Filter is %d bytes long; at most %d are allowed", len(text), FilterExprMaxBytes)
	}
	if !utf8.ValidString(text) {
		return nil, whole("Filter is not valid UTF-8")
	}
	p := &filterParser{in: []rune(text)}
	p.space()
	if p.done() {
		return nil, whole("Filter is empty")
	}
	x, err := p.or()
	if err == nil {
		if p.space(); !p.done() {
			err = p.unexpected("; join conditions with AND or OR")
		}
	}
	if err != nil {
		return nil, &FilterExprError{Issues: []FilterIssue{{Message: err.Error()}}}
	}
	var issues []FilterIssue
	conds := 0
	var walk func(x *FilterExpr, depth int) error
	walk = func(x *FilterExpr, depth int) error {
		if depth > FilterExprMaxDepth {
			return fmt.Errorf("Filter nests deeper than %d levels", FilterExprMaxDepth)
		}
		if x.Logic != "" {
			for i := range x.Children {
				if err := walk(&x.Children[i], depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		if conds++; conds > FilterExprMaxConditions {
			return fmt.Errorf("Filter has more than %d conditions", FilterExprMaxConditions)
		}
		if msg := checkCond(x.Cond, e); msg != "" {
			span := x.Cond.Span
			issues = append(issues, FilterIssue{Message: msg, Span: &span})
		}
		return nil
	}
	if err := walk(x, 1); err != nil {
		issues = append(issues, FilterIssue{Message: err.Error()})
	}
	if len(issues) > 0 {
		return nil, &FilterExprError{Issues: issues}
	}
	return x, nil
}

// checkCond says what is wrong with a condition of entity e, or "" when nothing is.
func checkCond(c FilterCond, e FilterEntity) string {
	k, ok := e.Key(c.Key)
	if !ok {
		names := make([]string, len(e.Keys))
		for i, k := range e.Keys {
			names[i] = k.Name
		}
		return fmt.Sprintf("Key %q is not a filter of %s; its keys are %s", c.Key, e.Name, strings.Join(names, ", "))
	}
	if !slices.Contains(k.Operators, c.Op) {
		return fmt.Sprintf("Key %q takes the operators %s, not %q", c.Key, strings.Join(k.Operators, ", "), c.Op)
	}
	n := len(c.Values)
	switch c.Op {
	case FilterIn, FilterNotIn:
		if n == 0 {
			return fmt.Sprintf("Operator %q of key %q needs a value, written %s:%s:value or %s:%s:[a,b]", c.Op, c.Key, c.Key, c.Op, c.Key, c.Op)
		}
	case FilterContains, FilterStartsWith:
		if n != 1 {
			return fmt.Sprintf("Operator %q of key %q takes one value, got %d", c.Op, c.Key, n)
		}
	case FilterIsSet, FilterIsNotSet:
		if n != 0 {
			return fmt.Sprintf("Operator %q of key %q takes no value, got %d", c.Op, c.Key, n)
		}
	}
	if n > FilterExprMaxValues {
		return fmt.Sprintf("Key %q has %d values; at most %d are allowed", c.Key, n, FilterExprMaxValues)
	}
	for _, v := range c.Values {
		switch {
		case v == "":
			return fmt.Sprintf("Key %q has an empty value", c.Key)
		case k.ValueType == "enum" && !slices.Contains(k.Enum, v):
			return fmt.Sprintf("Key %q has no value %q; it takes %s", c.Key, v, strings.Join(k.Enum, ", "))
		case k.ValueType == "uuid":
			if _, err := uuid.Parse(v); err != nil || len(v) != 36 {
				return fmt.Sprintf("Key %q takes an id like 3f2a0c1e-8b7d-4e5f-9a6b-0c1d2e3f4a5b, got %q", c.Key, v)
			}
		}
	}
	return ""
}

// filterParser reads the text one character at a time; every token ends at punctuation or
// space, so it needs no separate lexer.
type filterParser struct {
	in []rune
	at int
}

func (p *filterParser) done() bool { return p.at >= len(p.in) }

func (p *filterParser) space() {
	for !p.done() && unicode.IsSpace(p.in[p.at]) {
		p.at++
	}
}

func (p *filterParser) errorf(format string, a ...any) error {
	return fmt.Errorf(format+" at character %d", append(a, p.at)...)
}

// unexpected names what stands at the current position (the rest of its word, shortened).
func (p *filterParser) unexpected(hint string) error {
	end := p.at + 1
	for end < len(p.in) && end-p.at < 24 && !filterDelimiter(p.in[end]) && !filterDelimiter(p.in[p.at]) {
		end++
	}
	return fmt.Errorf("Unexpected %q at character %d%s", string(p.in[p.at:end]), p.at, hint)
}

func filterDelimiter(c rune) bool {
	switch c {
	case ':', ',', '[', ']', '(', ')', '"':
		return true
	}
	return unicode.IsSpace(c)
}

// keyword consumes word (any case) when it stands alone at the current position.
func (p *filterParser) keyword(word string) bool {
	p.space()
	end := p.at + len(word)
	if end > len(p.in) || !strings.EqualFold(string(p.in[p.at:end]), word) {
		return false
	}
	if end < len(p.in) && !filterDelimiter(p.in[end]) {
		return false
	}
	p.at = end
	return true
}

func (p *filterParser) or() (*FilterExpr, error) {
	return p.list(FilterOr, "OR", p.and)
}

func (p *filterParser) and() (*FilterExpr, error) {
	return p.list(FilterAnd, "AND", p.operand)
}

// list reads operands joined by the keyword into one group; a single operand stands alone.
func (p *filterParser) list(logic, word string, next func() (*FilterExpr, error)) (*FilterExpr, error) {
	first, err := next()
	if err != nil {
		return nil, err
	}
	children := []FilterExpr{*first}
	for p.keyword(word) {
		x, err := next()
		if err != nil {
			return nil, err
		}
		children = append(children, *x)
	}
	if len(children) == 1 {
		return first, nil
	}
	return &FilterExpr{Logic: logic, Children: children}, nil
}

func (p *filterParser) operand() (*FilterExpr, error) {
	p.space()
	if p.done() {
		return nil, p.errorf("Filter ends where a condition was expected")
	}
	if p.in[p.at] != '(' {
		return p.condition()
	}
	opened := p.at
	p.at++
	inner, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.space(); p.done() || p.in[p.at] != ')' {
		if p.done() {
			return nil, fmt.Errorf("Group opened at character %d is not closed", opened)
		}
		return nil, p.unexpected(fmt.Sprintf(" in the group opened at character %d", opened))
	}
	p.at++
	if inner.Logic == "" {
		return &FilterExpr{Logic: FilterAnd, Children: []FilterExpr{*inner}}, nil
	}
	return inner, nil
}

func (p *filterParser) condition() (*FilterExpr, error) {
	start := p.at
	key, err := p.word("a key")
	if err != nil {
		return nil, err
	}
	if p.done() || p.in[p.at] != ':' {
		return nil, fmt.Errorf("Key %q at character %d needs an operator, written %s:operator", key, start, key)
	}
	p.at++
	op, err := p.word("an operator after " + key + ":")
	if err != nil {
		return nil, err
	}
	c := FilterCond{Key: key, Op: op}
	if !p.done() && p.in[p.at] == ':' {
		p.at++
		if c.Values, err = p.values(); err != nil {
			return nil, err
		}
	}
	c.Span = TextSpan{Start: start, End: p.at}
	return &FilterExpr{Cond: c}, nil
}

// word reads a key or an operator.
func (p *filterParser) word(what string) (string, error) {
	start := p.at
	for !p.done() && !filterDelimiter(p.in[p.at]) {
		p.at++
	}
	if p.at == start {
		if p.done() {
			return "", p.errorf("Expected %s", what)
		}
		return "", p.unexpected(", expected " + what)
	}
	return string(p.in[start:p.at]), nil
}

func (p *filterParser) values() ([]string, error) {
	if p.done() || p.in[p.at] != '[' {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		return []string{v}, nil
	}
	opened := p.at
	p.at++
	var vs []string
	for {
		p.space()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
		p.space()
		if p.done() {
			return nil, fmt.Errorf("List of values opened at character %d is not closed", opened)
		}
		switch p.in[p.at] {
		case ',':
			p.at++
		case ']':
			p.at++
			return vs, nil
		default:
			return nil, p.unexpected(fmt.Sprintf(" in the list of values opened at character %d", opened))
		}
	}
}

func (p *filterParser) value() (string, error) {
	if p.done() {
		return "", p.errorf("Filter ends where a value was expected")
	}
	if p.in[p.at] == '"' {
		return p.quoted()
	}
	start := p.at
	for !p.done() && !filterDelimiter(p.in[p.at]) {
		p.at++
	}
	if p.at == start {
		return "", p.unexpected(", expected a value (quote a value holding spaces or punctuation)")
	}
	return string(p.in[start:p.at]), nil
}

func (p *filterParser) quoted() (string, error) {
	opened := p.at
	p.at++
	var b strings.Builder
	for !p.done() {
		switch c := p.in[p.at]; c {
		case '\\':
			if p.at+1 < len(p.in) && (p.in[p.at+1] == '"' || p.in[p.at+1] == '\\') {
				b.WriteRune(p.in[p.at+1])
				p.at += 2
				continue
			}
			if p.at+1 >= len(p.in) {
				return "", fmt.Errorf("Quoted value opened at character %d is not closed", opened)
			}
			return "", p.errorf(`Unknown escape "\%c" (only \" and \\ are allowed)`, p.in[p.at+1])
		case '"':
			p.at++
			return b.String(), nil
		default:
			b.WriteRune(c)
			p.at++
		}
	}
	return "", fmt.Errorf("Quoted value opened at character %d is not closed", opened)
}

// String writes the filter so that ParseFilterExpr reads the same tree back.
func (x *FilterExpr) String() string {
	if x == nil {
		return ""
	}
	if x.Logic == "" {
		c := x.Cond
		s := c.Key + ":" + c.Op
		switch len(c.Values) {
		case 0:
			return s
		case 1:
			return s + ":" + quoteFilterValue(c.Values[0])
		}
		vs := make([]string, len(c.Values))
		for i, v := range c.Values {
			vs[i] = quoteFilterValue(v)
		}
		return s + ":[" + strings.Join(vs, ",") + "]"
	}
	if len(x.Children) == 1 {
		return "(" + x.Children[0].String() + ")" // a parenthesised condition
	}
	parts := make([]string, len(x.Children))
	for i := range x.Children {
		ch := &x.Children[i]
		if parts[i] = ch.String(); len(ch.Children) > 1 {
			parts[i] = "(" + parts[i] + ")"
		}
	}
	return strings.Join(parts, " "+strings.ToUpper(x.Logic)+" ")
}

// quoteFilterValue quotes a value that would not read back as one word.
func quoteFilterValue(v string) string {
	plain := v != ""
	for _, c := range v {
		if filterDelimiter(c) || c == '\\' {
			plain = false
			break
		}
	}
	if plain && !strings.EqualFold(v, "and") && !strings.EqualFold(v, "or") {
		return v
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// Match evaluates the filter over one row; value gives a key's value and whether it is set.
// A nil filter matches every row.
func (x *FilterExpr) Match(value func(key string) (string, bool)) bool {
	if x == nil {
		return true
	}
	switch x.Logic {
	case FilterAnd:
		for i := range x.Children {
			if !x.Children[i].Match(value) {
				return false
			}
		}
		return true
	case FilterOr:
		for i := range x.Children {
			if x.Children[i].Match(value) {
				return true
			}
		}
		return false
	}
	return x.Cond.MatchValue(value(x.Cond.Key))
}

// MatchValue evaluates the condition on a value that is set or not. An unset value is in no
// list, contains and starts with nothing. contains and starts_with compare with A–Z folded to
// a–z and every other character as it is, so every store can answer alike whatever its locale
// (FoldASCII).
func (c FilterCond) MatchValue(v string, set bool) bool {
	switch c.Op {
	case FilterIn:
		return set && slices.Contains(c.Values, v)
	case FilterNotIn:
		return !set || !slices.Contains(c.Values, v)
	case FilterContains:
		return set && len(c.Values) == 1 && strings.Contains(FoldASCII(v), FoldASCII(c.Values[0]))
	case FilterStartsWith:
		return set && len(c.Values) == 1 && strings.HasPrefix(FoldASCII(v), FoldASCII(c.Values[0]))
	case FilterIsSet:
		return set
	case FilterIsNotSet:
		return !set
	}
	return false
}

// MatchMapping evaluates a filter of BuildsEntity on a mapping file; patch keys are never set.
func (x *FilterExpr) MatchMapping(m Mapping) bool {
	return x.Match(func(key string) (string, bool) {
		switch key {
		case "version_name":
			return m.VersionName, true
		case "version_code":
			return m.VersionCode, true
		case "mapping_type":
			return m.Type, true
		}
		return "", false
	})
}
