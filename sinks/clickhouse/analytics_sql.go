package clickhouse

import (
	"math"
	"strconv"
	"strings"

	"github.com/svc-dev/svc/model"
)

// The SQL pieces of the analytics queries: model's Go definitions (EventFilter.Match,
// IssueQuery.MatchIssue, UDExpr.Eval, ClassOf, Buckets.Start) as ClickHouse expressions over the
// events table, in SQL that 18.16 and current releases both run. Every user value is a `?`
// argument; only our own constants (enum codes, lengths) are written into the text.

// query accumulates SQL text and its positional arguments in step.
type query struct {
	b    strings.Builder
	args []any
}

// sql appends text and the arguments of its `?` placeholders.
func (q *query) sql(text string, args ...any) *query {
	q.b.WriteString(text)
	q.args = append(q.args, args...)
	return q
}

// list appends "?, ?, …" with one argument per value.
func list[T any](q *query, vals []T) {
	for i, v := range vals {
		if i > 0 {
			q.b.WriteString(", ")
		}
		q.b.WriteByte('?')
		q.args = append(q.args, v)
	}
}

func (q *query) String() string { return q.b.String() }

// classSQL is model.ClassOf of a row with a group id: the codes of model.ClassCrash (1),
// ClassANR (2) and ClassHandled (3), 0 for none. Rows it is used on have a group (issueRowsSQL).
const classSQL = "multiIf(type = 'exception', if(fatal != 0, 1, 3), type = 'anr', 2, 0)"

// issueRowsSQL selects the rows that have an issue class (ClassOf != 0). type comes second in
// the sorting key, so this also narrows the index range.
const issueRowsSQL = "type IN ('exception', 'anr') AND group_id != ''"

// idSQL is the event id as text. ClickHouse orders the UUID type by its two 64-bit halves, the
// second first (18.16 and current releases differ on this), while model orders ids by their
// bytes (uuidLess); the canonical lowercase text sorts exactly in byte order on any version.
const idSQL = "toString(id)"

// timeWindow appends the [from, to) bounds on the nanosecond column, and the DateTime bounds
// they imply on `time` (floor of the seconds, clamped like dateTime), which let ClickHouse skip
// the partitions and index ranges outside the window.
func timeWindow(q *query, from, to int64) {
	q.sql(" AND timestamp >= ? AND timestamp < ? AND time >= toDateTime(?) AND time <= toDateTime(?)",
		from, to, dateTime(from), dateTime(to))
}

// eventFilter appends the WHERE conditions of model.EventFilter.Match (app first).
func eventFilter(q *query, f *model.EventFilter) {
	q.sql("app_id = toUUID(?)", f.App)
	timeWindow(q, f.From, f.To)
	attrFilter(q, f)
}

// attrFilter appends the conditions of an EventFilter on attributes: versions, the device,
// locale and network lists, countries and ud_expression. Events and spans share the columns.
func attrFilter(q *query, f *model.EventFilter) {
	if len(f.Versions) > 0 {
		q.sql(" AND (app_version, app_build) IN (")
		for i, v := range f.Versions {
			if i > 0 {
				q.sql(", ")
			}
			q.sql("(?, ?)", v.Name, v.Code)
		}
		q.sql(")")
	}
	if len(f.Countries) > 0 {
		q.sql(" AND 0") // events and spans carry no country
	}
	for _, a := range [...]struct {
		col  string
		vals []string
	}{
		{"device_name", f.DeviceNames}, {"device_manufacturer", f.DeviceManufacturers},
		{"device_locale", f.Locales}, {"network_provider", f.NetworkProviders},
		{"network_type", f.NetworkTypes}, {"network_generation", f.NetworkGenerations},
	} {
		if len(a.vals) > 0 {
			q.sql(" AND " + a.col + " IN (")
			list(q, a.vals)
			q.sql(")")
		}
	}
	if f.UD != nil {
		q.sql(" AND ")
		udExpr(q, f.UD)
	}
}

// issueFilter appends the WHERE conditions of model.IssueQuery.MatchIssue.
func issueFilter(q *query, iq *model.IssueQuery) {
	eventFilter(q, &iq.EventFilter)
	q.sql(" AND " + issueRowsSQL)
	if len(iq.Classes) > 0 {
		q.sql(" AND " + classSQL + " IN (")
		for i, c := range iq.Classes {
			if i > 0 {
				q.sql(", ")
			}
			q.sql(strconv.Itoa(int(c)))
		}
		q.sql(")")
	}
	if iq.GroupID != "" {
		q.sql(" AND group_id = ?", iq.GroupID)
	}
	if len(iq.Severities) > 0 { // severities narrow exceptions; an ANR stays
		q.sql(" AND (type = 'anr' OR severity IN (")
		list(q, iq.Severities)
		q.sql("))")
	}
}

// udExpr appends x as a UInt8 expression equal to x.Eval on the row's ud_keys, ud_types and
// ud_values. Values are compared as model.UDCmp.Eval does, for the canonical value texts that
// UDAttr stores (what ingest writes).
func udExpr(q *query, x *model.UDExpr) {
	switch {
	case x.Cmp != nil:
		udCmp(q, x.Cmp)
	case x.And != nil:
		udList(q, x.And, " AND ")
	default:
		udList(q, x.Or, " OR ")
	}
}

func udList(q *query, xs []model.UDExpr, op string) {
	if len(xs) == 0 { // not a parsed expression; Eval: and of nothing is true, or false
		if op == " AND " {
			q.sql("1")
		} else {
			q.sql("0")
		}
		return
	}
	q.sql("(")
	for i := range xs {
		if i > 0 {
			q.sql(op)
		}
		udExpr(q, &xs[i])
	}
	q.sql(")")
}

// udCmp appends one comparison. indexOf finds the first position of the key (Eval's binary
// search finds the first of the sorted keys) and 0 when it is absent, where ud_types[0] is 0,
// never a type: a missing key or another type is false for every operator, neq included.
// int64 and float64 cmps match attributes of both numeric types (model.UDCmp): one branch per
// stored type, each with the cmp restated for that type (OnInt, OnFloat), so that both compare
// exactly.
func udCmp(q *query, c *model.UDCmp) {
	val := func() { q.sql("ud_values[indexOf(ud_keys, ?)]", c.Key) }
	isType := func(t model.UDType) {
		q.sql("ud_types[indexOf(ud_keys, ?)] = "+strconv.Itoa(int(t))+" AND ", c.Key)
	}
	switch c.Type {
	case model.UDString, model.UDBool:
		q.sql("(")
		isType(c.Type)
		switch c.Op {
		case model.UDOpEq:
			val()
			q.sql(" = ?", c.Value)
		case model.UDOpNeq:
			val()
			q.sql(" != ?", c.Value)
		case model.UDOpContains:
			// lower() folds ASCII letters only, as asciiFoldIndex; the needle is folded here.
			q.sql("position(lower(")
			val()
			q.sql("), ?) > 0", asciiLower(c.Value))
		case model.UDOpStartsWith:
			q.sql("startsWith(lower(")
			val()
			q.sql("), ?)", asciiLower(c.Value))
		default:
			q.sql("0")
		}
		q.sql(")")
	case model.UDInt64, model.UDFloat64:
		q.sql("((")
		isType(model.UDInt64)
		udInt(q, c, val)
		q.sql(") OR (")
		isType(model.UDFloat64)
		op, k, always := c.OnFloat()
		udFloat(q, &model.UDCmp{Key: c.Key, Type: model.UDFloat64, Op: op, Float: k}, always, val)
		q.sql("))")
	default:
		q.sql("0")
	}
}

// udInt appends the comparison of an int64 attribute value with c restated by OnInt.
// Integer parsing is exact; a value that does not parse is false, as in Eval.
func udInt(q *query, c *model.UDCmp, val func()) {
	op, k, always := c.OnInt()
	sqlOp, ok := sqlOps[op]
	if !ok || always < 0 {
		q.sql("0")
		return
	}
	q.sql("isNotNull(toInt64OrNull(")
	val()
	q.sql("))")
	if always > 0 {
		return
	}
	q.sql(" AND toInt64OrZero(")
	val()
	q.sql(") "+sqlOp+" ?", k) // ? renders k as an integer literal: exact
}

var sqlOps = map[model.UDOp]string{
	model.UDOpEq: "=", model.UDOpNeq: "!=", model.UDOpGt: ">", model.UDOpLt: "<",
	model.UDOpGte: ">=", model.UDOpLte: "<=",
}

// floatBand is how many representable doubles on each side of a float constant udFloat
// decides by the value's text. ClickHouse 18.16 parses a Float64 from text with an error of up
// to 2 units in the last place (measured: about 12% of random doubles are off by one or two),
// so a value within a few ulps of the constant could compare wrongly after parsing. Beyond the
// band, an error of e ulps on both sides cannot change the order while floatBand > 2e.
const floatBand = 8

// udFloat appends a float comparison that is exact whatever the server's float parser: the
// canonical texts of the doubles within floatBand of the constant are decided here, by their
// exact values; any other value is compared after parsing, where parse errors cannot flip the
// order. NaN is false for every operator (Eval), also for neq. always is OnFloat's: +1 for
// every (non-NaN) value, -1 for none.
func udFloat(q *query, c *model.UDCmp, always int, val func()) {
	op, ok := sqlOps[c.Op]
	if !ok || always < 0 {
		q.sql("0")
		return
	}
	if always > 0 {
		q.sql("isNotNull(toFloat64OrNull(")
		val()
		q.sql(")) AND NOT isNaN(toFloat64OrZero(")
		val()
		q.sql("))")
		return
	}
	var yes, band []string
	add := func(d float64) {
		if math.IsInf(d, 0) || math.IsNaN(d) {
			return
		}
		texts := []string{strconv.FormatFloat(d, 'g', -1, 64)}
		if d == 0 { // -0 and 0 are the same number with two texts
			texts = []string{"0", "-0"}
		}
		for _, t := range texts {
			band = append(band, t)
			if compareFloat(c.Op, d, c.Float) {
				yes = append(yes, t)
			}
		}
	}
	add(c.Float)
	// Zero is passed once each way (as -0 or 0, both texts added).
	for _, dir := range [...]float64{math.Inf(1), math.Inf(-1)} {
		for d, i := c.Float, 0; i < floatBand; i++ {
			d = math.Nextafter(d, dir)
			add(d)
		}
	}
	q.sql("isNotNull(toFloat64OrNull(")
	val()
	q.sql(")) AND NOT isNaN(toFloat64OrZero(")
	val()
	q.sql(")) AND (")
	if len(yes) > 0 {
		val()
		q.sql(" IN (")
		list(q, yes)
		q.sql(") OR ")
	}
	q.sql("(")
	val()
	q.sql(" NOT IN (")
	list(q, band)
	// The constant goes as text through the same parser as the values: the SQL parser of
	// 18.16 rejects denormal literals such as 5e-324.
	q.sql(") AND toFloat64OrZero(")
	val()
	q.sql(") "+op+" toFloat64(?)))", strconv.FormatFloat(c.Float, 'g', -1, 64))
}

// compareFloat is Eval's float comparison of a value v with the constant c.
func compareFloat(op model.UDOp, v, c float64) bool {
	switch op {
	case model.UDOpEq:
		return v == c
	case model.UDOpNeq:
		return v != c
	case model.UDOpGt:
		return v > c
	case model.UDOpLt:
		return v < c
	case model.UDOpGte:
		return v >= c
	case model.UDOpLte:
		return v <= c
	}
	return false
}

// asciiLower lowers ASCII letters only, as ClickHouse's lower() and model's string operators.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// Nanoseconds per unit, as Int64 literals: ClickHouse types a bare 60000000000 as UInt64, and
// modulo(Int64, UInt64) converts a negative timestamp to UInt64.
const (
	nsMinute = "toInt64(60000000000)"
	nsHour   = "toInt64(3600000000000)"
	nsDay    = "toInt64(86400000000000)"
)

// floorDiv is ⌊x / d⌋ for Int64 (intDiv truncates toward zero).
func floorDiv(x, d string) string {
	return "(intDiv(" + x + ", " + d + ") - if(modulo(" + x + ", " + d + ") < 0, 1, 0))"
}

// The rows whose buckets in a time zone ClickHouse computes with its zone functions:
// timestamps in [1971-01-01, 2105-01-01) UTC, in Unix nanoseconds. Those functions work on
// DateTime (UInt32 seconds since 1970) and, in 18.16, on a table of dates 1970–2105, and a
// bucket start must stay inside both in every zone (a month of 1971-01 in UTC+14 starts in
// 1970). Rows outside get the UTC bucket of the row (integer arithmetic, as in UTC); model's
// Buckets.Start, and so the embedded store, would give the zone's. The ingest API never
// accepts such times (an app keeps a year at most), and the conformance suite's zone cases
// stay inside.
const (
	zoneRowsFrom = "toInt64(31536000000000000)"   // 1971-01-01T00:00:00Z
	zoneRowsTo   = "toInt64(4260211200000000000)" // 2105-01-01T00:00:00Z
)

// bucketsSQL is by.Start of the row's nanosecond column col, in Unix nanoseconds (Int64), and
// the arguments of its `?` placeholders (the zone's name, bound as a string value).
//
// In UTC, and for minutes in any zone (model's minutes are UTC's), it is integer arithmetic on
// the column: no time zone and no DateTime range is involved. In another zone it is
// ClickHouse's toStartOfHour, toStartOfDay and toStartOfMonth with the zone, on
// toDateTime(col / 10^9), the month's Date turned back into its first instant with toDateTime
// in the zone; model.Buckets states the definitions both follow (checked on 18.16 against Go
// for zones of every kind by TestBucketsSQLZones). Rows outside [zoneRowsFrom, zoneRowsTo) get
// their UTC bucket. prefix names the aliases, which must be unique within a query level.
func bucketsSQL(by model.Buckets, col, prefix string) (string, []any) {
	utc := utcBucketSQL(by.Group, col, prefix)
	if by.UTC() || by.Group == model.PlotMinutes {
		return utc, nil
	}
	// Clamped, so that the branch not taken stays within DateTime's and the zone table's range.
	t := "toDateTime(intDiv(least(greatest(" + col + ", " + zoneRowsFrom + "), " + zoneRowsTo + "), 1000000000))"
	var start string
	args := []any{by.Zone()}
	switch by.Group {
	case model.PlotHours:
		start = "toStartOfHour(" + t + ", ?)"
	case model.PlotMonths:
		start = "toDateTime(toStartOfMonth(" + t + ", ?), ?)"
		args = append(args, by.Zone())
	default:
		start = "toStartOfDay(" + t + ", ?)"
	}
	return "if(" + col + " >= " + zoneRowsFrom + " AND " + col + " < " + zoneRowsTo + ", toInt64(toUInt32(" + start +
		")) * toInt64(1000000000), " + utc + ")", args
}

// utcBucketSQL is model.BucketStart of col in Unix nanoseconds (Int64), computed from the
// nanosecond column with integer arithmetic in UTC.
func utcBucketSQL(g model.PlotTimeGroup, col, prefix string) string {
	switch g {
	case model.PlotMinutes:
		return floorDiv(col, nsMinute) + " * " + nsMinute
	case model.PlotHours:
		return floorDiv(col, nsHour) + " * " + nsHour
	case model.PlotMonths:
		// Days since 1970-01-01, less the day of the month found by the civil-from-days
		// algorithm (H. Hinnant) on the day of the 400-year era; z ≥ 0 for every Int64
		// nanosecond time, so intDiv needs no flooring there. Each alias is defined at its
		// first use.
		d, z, doe, yoe, doy := prefix+"d", prefix+"z", prefix+"doe", prefix+"yoe", prefix+"doy"
		doeDef := "((((" + d + " + 719468) AS " + z + ") - intDiv(" + z + ", 146097) * 146097) AS " + doe + ")"
		yoeDef := "(intDiv(" + doe + " - intDiv(" + doe + ", 1460) + intDiv(" + doe + ", 36524) - intDiv(" + doe + ", 146096), 365) AS " + yoe + ")"
		doyDef := "((" + doeDef + " - (365 * " + yoeDef + " + intDiv(" + yoe + ", 4) - intDiv(" + yoe + ", 100))) AS " + doy + ")"
		return "((" + floorDiv(col, nsDay) + " AS " + d + ") - (" + doyDef +
			" - intDiv(153 * intDiv(5 * " + doy + " + 2, 153) + 2, 5))) * " + nsDay
	}
	return floorDiv(col, nsDay) + " * " + nsDay
}
