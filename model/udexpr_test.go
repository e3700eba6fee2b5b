package model

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func cmpJSON(key, typ, op, value string) string {
	return `{"cmp":{"key":"` + key + `","type":"` + typ + `","op":"` + op + `","value":` + value + `}}`
}

func TestParseUDExprErrors(t *testing.T) {
	deep := cmpJSON("k", "string", "eq", `"v"`)
	for i := 1; i < MaxUDExprDepth; i++ {
		deep = `{"and":[` + deep + `]}`
	}
	tooDeep := `{"or":[` + deep + `]}`
	many := make([]string, MaxUDExprNodes-1)
	for i := range many {
		many[i] = cmpJSON("k", "int64", "gt", `"1"`)
	}
	manyOK := `{"and":[` + strings.Join(many, ",") + `]}`
	tooMany := `{"and":[` + strings.Join(append(many, many[0]), ",") + `]}`

	cases := []struct {
		name, in   string
		path, want string // want == "" means valid
	}{
		{"cmp at the root", cmpJSON("plan", "string", "eq", `"pro"`), "", ""},
		{"deepest allowed", deep, "", ""},
		{"most nodes allowed", manyOK, "", ""},
		{"too deep", tooDeep, "or[0].and[0].and[0].and[0].and[0].and[0].and[0].and[0]", "nests deeper than 8 levels"},
		{"too many nodes", tooMany, "and[63]", "more than 64"},
		{"too long", `{"and":[` + strings.Repeat(" ", MaxUDExprBytes) + `]}`, "", "bytes long"},
		{"not json", `{"and":`, "and", "malformed JSON"},
		{"trailing data", cmpJSON("k", "bool", "eq", `"true"`) + `x`, "", "malformed JSON"},
		{"array root", `[]`, "", `must be an object with one of "and", "or" or "cmp"`},
		{"empty object", `{}`, "", "is empty"},
		{"two members", `{"and":[` + cmpJSON("k", "bool", "eq", `true`) + `],"or":[]}`, "", `found another member "or"`},
		{"unknown member", `{"not":[]}`, "", `unknown member "not"`},
		{"empty and", `{"and":[]}`, "and", "at least one node"},
		{"and not array", `{"and":{}}`, "and", "must be an array"},
		{"child not object", `{"or":[1]}`, "or[0]", "must be an object"},
		{"cmp not object", `{"cmp":"x"}`, "cmp", "must be an object"},
		{"cmp missing value", `{"cmp":{"key":"k","type":"string","op":"eq"}}`, "cmp.value", "is required"},
		{"cmp missing key", `{"cmp":{"type":"string","op":"eq","value":"v"}}`, "cmp.key", "is required"},
		{"cmp duplicate", `{"cmp":{"key":"k","key":"j","type":"string","op":"eq","value":"v"}}`, "cmp.key", "more than once"},
		{"cmp unknown member", `{"cmp":{"key":"k","type":"string","op":"eq","value":"v","x":1}}`, "cmp", `unknown member "x"`},
		{"key charset", cmpJSON("a.b", "string", "eq", `"v"`), "cmp.key", "letters, digits"},
		{"key empty", cmpJSON("", "string", "eq", `"v"`), "cmp.key", "1 to 256"},
		{"key too long", cmpJSON(strings.Repeat("k", 257), "string", "eq", `"v"`), "cmp.key", "1 to 256"},
		{"key 256", cmpJSON(strings.Repeat("k", 256), "string", "eq", `"v"`), "", ""},
		{"key not string", `{"cmp":{"key":1,"type":"string","op":"eq","value":"v"}}`, "cmp.key", "must be a string, got a number"},
		{"unknown type", cmpJSON("k", "number", "eq", `"1"`), "cmp.type", "use one of bool, int64, float64, string"},
		{"contains on int64", cmpJSON("k", "int64", "contains", `"1"`), "cmp.op", "not allowed for type int64; use one of eq, neq, gt, lt, gte, lte"},
		{"gt on string", cmpJSON("k", "string", "gt", `"a"`), "cmp.op", "use one of eq, neq, contains, startsWith"},
		{"gt on bool", cmpJSON("k", "bool", "gt", `"true"`), "cmp.op", "use one of eq, neq"},
		{"startsWith on float", cmpJSON("k", "float64", "startsWith", `"1"`), "cmp.op", "not allowed"},
		{"unknown op", cmpJSON("k", "string", "like", `"a"`), "cmp.op", `"like" is not allowed`},
		{"int64 fraction", cmpJSON("k", "int64", "eq", `"1.5"`), "cmp.value", "is not an int64"},
		{"int64 overflow", cmpJSON("k", "int64", "eq", `"9223372036854775808"`), "cmp.value", "is not an int64"},
		{"int64 max", cmpJSON("k", "int64", "eq", `"9223372036854775807"`), "", ""},
		{"int64 number literal", cmpJSON("k", "int64", "eq", `-42`), "", ""},
		{"int64 from bool", cmpJSON("k", "int64", "eq", `true`), "cmp.value", "is not an int64"},
		{"float text", cmpJSON("k", "float64", "lt", `"abc"`), "cmp.value", "finite float64"},
		{"float inf", cmpJSON("k", "float64", "lt", `"1e400"`), "cmp.value", "finite float64"},
		{"float NaN", cmpJSON("k", "float64", "lt", `"NaN"`), "cmp.value", "finite float64"},
		{"float literal", cmpJSON("k", "float64", "lt", `2.5e3`), "", ""},
		{"bool text", cmpJSON("k", "bool", "eq", `"yes"`), "cmp.value", `use "true" or "false"`},
		{"bool literal", cmpJSON("k", "bool", "eq", `false`), "", ""},
		{"bool from number", cmpJSON("k", "bool", "eq", `1`), "cmp.value", "is not a bool"},
		{"string from number", cmpJSON("k", "string", "eq", `1`), "cmp.value", "write it in quotes"},
		{"string too long", cmpJSON("k", "string", "eq", `"`+strings.Repeat("é", 257)+`"`), "cmp.value", "at most 256"},
		{"value object", cmpJSON("k", "string", "eq", `{}`), "cmp.value", "got an object"},
		{"nested path", `{"and":[` + cmpJSON("a", "bool", "eq", `"true"`) + `,{"or":[` + cmpJSON("b", "int64", "contains", `"1"`) + `]}]}`, "and[1].or[0].cmp.op", "not allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, err := ParseUDExpr(c.in)
			if c.want == "" {
				if err != nil || x == nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var ue *UDExprError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUDExpr) {
				t.Fatalf("got %v (%T), want a *UDExprError", err, err)
			}
			if ue.Path != c.path || !strings.Contains(ue.Reason, c.want) {
				t.Errorf("got path %q reason %q; want path %q reason containing %q", ue.Path, ue.Reason, c.path, c.want)
			}
			if !strings.HasPrefix(err.Error(), "ud_expression: ") {
				t.Errorf("message %q", err.Error())
			}
		})
	}
}

func TestParseUDExprEmpty(t *testing.T) {
	for _, in := range []string{"", "  \n"} {
		x, err := ParseUDExpr(in)
		if x != nil || err != nil {
			t.Errorf("%q: %v %v", in, x, err)
		}
		if !x.Eval([]UDAttr{{"a", UDString, "b"}}) || !x.Eval(nil) {
			t.Errorf("nil expression must match everything")
		}
	}
}

func TestParseUDExprTree(t *testing.T) {
	x, err := ParseUDExpr(` { "and" : [ {"cmp":{"value":" 7","op":"gte","type":"int64","key":"n"}},
		{"or":[{"cmp":{"key":"s","type":"string","op":"startsWith","value":"a\u00e9\"\\"}},{"cmp":{"key":"f","type":"float64","op":"lt","value":"-0"}}]}]}`)
	if err == nil {
		t.Fatalf("%q must not parse as int64 (leading space)", " 7")
	}
	x, err = ParseUDExpr(`{"and":[{"cmp":{"value":"+7","op":"gte","type":"int64","key":"n"}},
		{"or":[{"cmp":{"key":"s","type":"string","op":"startsWith","value":"a\u00e9\"\\"}},{"cmp":{"key":"f","type":"float64","op":"lt","value":"-0"}}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := &UDExpr{And: []UDExpr{
		{Cmp: &UDCmp{Key: "n", Type: UDInt64, Op: UDOpGte, Value: "7", Int: 7}},
		{Or: []UDExpr{
			{Cmp: &UDCmp{Key: "s", Type: UDString, Op: UDOpStartsWith, Value: "aé\"\\"}},
			{Cmp: &UDCmp{Key: "f", Type: UDFloat64, Op: UDOpLt, Value: "0", Float: 0}},
		}},
	}}
	if !reflect.DeepEqual(x, want) {
		t.Fatalf("got %+v", x)
	}
	// The canonical text reads back to the same tree.
	text, _ := x.MarshalJSON()
	const canon = `{"and":[{"cmp":{"key":"n","type":"int64","op":"gte","value":"7"}},{"or":[{"cmp":{"key":"s","type":"string","op":"startsWith","value":"aé\"\\"}},{"cmp":{"key":"f","type":"float64","op":"lt","value":"0"}}]}]}`
	if string(text) != canon {
		t.Errorf("canonical\n got %s\nwant %s", text, canon)
	}
	back, err := ParseUDExpr(string(text))
	if err != nil || !reflect.DeepEqual(back, x) {
		t.Errorf("round trip: %v %+v", err, back)
	}
}

func TestUDExprEval(t *testing.T) {
	attrs := []UDAttr{ // sorted by key, as the decoder leaves them
		{"big", UDInt64, "9223372036854775807"},
		{"f", UDFloat64, "1.5"},
		{"n", UDInt64, "42"},
		{"name", UDString, "Order-ÄB-12"},
		{"neg", UDInt64, "-3"},
		{"premium", UDBool, "true"},
		{"z", UDFloat64, "2"},
	}
	cases := []struct {
		expr string
		want bool
	}{
		// strings
		{cmpJSON("name", "string", "eq", `"Order-ÄB-12"`), true},
		{cmpJSON("name", "string", "eq", `"order-äb-12"`), false},
		{cmpJSON("name", "string", "neq", `"x"`), true},
		{cmpJSON("name", "string", "neq", `"Order-ÄB-12"`), false},
		{cmpJSON("name", "string", "contains", `"der-ä"`), false}, // only ASCII letters fold
		{cmpJSON("name", "string", "contains", `"DER-Ä"`), true},
		{cmpJSON("name", "string", "contains", `"b-12"`), true},
		{cmpJSON("name", "string", "contains", `""`), true},
		{cmpJSON("name", "string", "contains", `"12x"`), false},
		{cmpJSON("name", "string", "startsWith", `"ORDER"`), true},
		{cmpJSON("name", "string", "startsWith", `"rder"`), false},
		{cmpJSON("name", "string", "startsWith", `"Order-ÄB-12-and-more"`), false},
		// ints: numeric, not textual, order
		{cmpJSON("n", "int64", "gt", `"9"`), true},
		{cmpJSON("n", "int64", "lt", `"100"`), true},
		{cmpJSON("n", "int64", "eq", `42`), true},
		{cmpJSON("n", "int64", "neq", `"42"`), false},
		{cmpJSON("n", "int64", "gte", `"42"`), true},
		{cmpJSON("n", "int64", "lte", `"41"`), false},
		{cmpJSON("neg", "int64", "lt", `"-2"`), true},
		{cmpJSON("big", "int64", "gt", `"9223372036854775806"`), true}, // exact beyond float64
		{cmpJSON("big", "int64", "eq", `"9223372036854775806"`), false},
		// floats
		{cmpJSON("f", "float64", "gt", `"1.25"`), true},
		{cmpJSON("f", "float64", "eq", `"1.50"`), true},
		{cmpJSON("f", "float64", "lte", `"1e0"`), false},
		{cmpJSON("z", "float64", "eq", `2`), true},
		// bools
		{cmpJSON("premium", "bool", "eq", `"true"`), true},
		{cmpJSON("premium", "bool", "neq", `true`), false},
		// a missing key or another type is false, neq included; but int64 and float64 compare
		// numerically with each other (udexpr_num_test.go has the rest)
		{cmpJSON("missing", "string", "neq", `"x"`), false},
		{cmpJSON("n", "float64", "eq", `"42"`), true},
		{cmpJSON("n", "string", "eq", `"42"`), false},
		{cmpJSON("f", "int64", "gt", `"0"`), true},
		{cmpJSON("f", "int64", "eq", `"1"`), false},
		{cmpJSON("premium", "int64", "neq", `"1"`), false},
		// and means and, or means or
		{`{"and":[` + cmpJSON("n", "int64", "eq", `"42"`) + `,` + cmpJSON("premium", "bool", "eq", `"false"`) + `]}`, false},
		{`{"and":[` + cmpJSON("n", "int64", "eq", `"42"`) + `,` + cmpJSON("premium", "bool", "eq", `"true"`) + `]}`, true},
		{`{"or":[` + cmpJSON("n", "int64", "eq", `"1"`) + `,` + cmpJSON("premium", "bool", "eq", `"false"`) + `]}`, false},
		{`{"or":[` + cmpJSON("n", "int64", "eq", `"1"`) + `,` + cmpJSON("premium", "bool", "eq", `"true"`) + `]}`, true},
		{`{"and":[{"or":[` + cmpJSON("missing", "bool", "eq", `"true"`) + `,` + cmpJSON("f", "float64", "gt", `"1"`) + `]},` + cmpJSON("name", "string", "startsWith", `"o"`) + `]}`, true},
	}
	for _, c := range cases {
		x, err := ParseUDExpr(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if got := x.Eval(attrs); got != c.want {
			t.Errorf("%s: %v, want %v", c.expr, got, c.want)
		}
	}
	x, _ := ParseUDExpr(cmpJSON("n", "int64", "eq", `"42"`))
	if x.Eval(nil) {
		t.Error("no attributes must not match")
	}
}

func TestOperatorTypes(t *testing.T) {
	want := map[string][]string{
		"bool":    {"eq", "neq"},
		"int64":   {"eq", "neq", "gt", "lt", "gte", "lte"},
		"float64": {"eq", "neq", "gt", "lt", "gte", "lte"},
		"string":  {"eq", "neq", "contains", "startsWith"},
	}
	got := OperatorTypes()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
	got["bool"][0] = "changed"
	if OperatorTypes()["bool"][0] != "eq" {
		t.Fatal("OperatorTypes must return a fresh map")
	}
}

// FuzzUDExpr: parsing never panics, a parsed expression evaluates without panicking, and its
// canonical form parses back to the same tree.
func FuzzUDExpr(f *testing.F) {
	f.Add(`{"and":[{"cmp":{"key":"n","type":"int64","op":"gt","value":"1"}},{"or":[{"cmp":{"key":"s","type":"string","op":"contains","value":"A"}}]}]}`)
	f.Add(cmpJSON("f", "float64", "lte", `1e5`))
	f.Add(cmpJSON("b", "bool", "neq", `"false"`))
	f.Add(`{"or":[{"and":[{"cmp":{}}]}]}`)
	attrs := []UDAttr{{"b", UDBool, "false"}, {"f", UDFloat64, "3.25"}, {"n", UDInt64, "5"}, {"s", UDString, "aAé"}}
	f.Fuzz(func(t *testing.T, in string) {
		x, err := ParseUDExpr(in)
		if err != nil {
			if !errors.Is(err, ErrUDExpr) {
				t.Fatalf("error %v does not match ErrUDExpr", err)
			}
			return
		}
		got := x.Eval(attrs)
		if x == nil {
			return
		}
		text, _ := x.MarshalJSON()
		back, err := ParseUDExpr(string(text))
		if err != nil || !reflect.DeepEqual(back, x) {
			t.Fatalf("canonical %s: %v", text, err)
		}
		if back.Eval(attrs) != got {
			t.Fatal("canonical form evaluates differently")
		}
	})
}

// BenchmarkUDExprEval: a four-comparison expression against ten attributes, as a store
// backend without SQL evaluates it per event.
func BenchmarkUDExprEval(b *testing.B) {
	x, err := ParseUDExpr(`{"and":[` + cmpJSON("plan", "string", "eq", `"pro"`) + `,{"or":[` +
		cmpJSON("n", "int64", "gte", `"10"`) + `,` + cmpJSON("ratio", "float64", "lt", `"0.5"`) + `]},` +
		cmpJSON("name", "string", "contains", `"ORDER"`) + `]}`)
	if err != nil {
		b.Fatal(err)
	}
	attrs := []UDAttr{{"a", UDString, "x"}, {"b", UDBool, "true"}, {"c", UDInt64, "1"}, {"d", UDString, "y"},
		{"n", UDInt64, "7"}, {"name", UDString, "customer order 12345"}, {"plan", UDString, "pro"},
		{"ratio", UDFloat64, "0.25"}, {"x", UDFloat64, "1"}, {"zeta", UDString, "z"}}
	if !x.Eval(attrs) {
		b.Fatal("expected a match")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !x.Eval(attrs) {
			b.Fatal("no match")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

func BenchmarkParseUDExpr(b *testing.B) {
	in := `{"and":[` + cmpJSON("plan", "string", "eq", `"pro"`) + `,{"or":[` +
		cmpJSON("n", "int64", "gte", `"10"`) + `,` + cmpJSON("ratio", "float64", "lt", `"0.5"`) + `]}]}`
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseUDExpr(in); err != nil {
			b.Fatal(err)
		}
	}
}
