package model

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// cond is a condition without its span, for comparing trees.
func cond(key, op string, values ...string) FilterExpr {
	return FilterExpr{Cond: FilterCond{Key: key, Op: op, Values: values}}
}

func group(logic string, children ...FilterExpr) FilterExpr {
	return FilterExpr{Logic: logic, Children: children}
}

// withoutSpans clears every span, so trees written differently compare equal.
func withoutSpans(x FilterExpr) FilterExpr {
	x.Cond.Span = TextSpan{}
	if len(x.Cond.Values) == 0 {
		x.Cond.Values = nil
	}
	if x.Children != nil {
		ch := make([]FilterExpr, len(x.Children))
		for i := range x.Children {
			ch[i] = withoutSpans(x.Children[i])
		}
		x.Children = ch
	}
	return x
}

func TestParseFilterExpr(t *testing.T) {
	cases := []struct {
		name, text string
		want       FilterExpr
	}{
		{"one value", "version_name:in:1.2.0", cond("version_name", "in", "1.2.0")},
		{"list", "version_code:not_in:[10, 11 ,12]", cond("version_code", "not_in", "10", "11", "12")},
		{"no value", "patch_id:is_not_set", cond("patch_id", "is_not_set")},
		{"and binds tighter", "version_name:in:1 AND mapping_type:in:dsym OR patch_id:is_set",
			group(FilterOr, group(FilterAnd, cond("version_name", "in", "1"), cond("mapping_type", "in", "dsym")), cond("patch_id", "is_set"))},
		{"keywords any case", "version_name:in:1 and version_code:in:2 Or version_code:in:3",
			group(FilterOr, group(FilterAnd, cond("version_name", "in", "1"), cond("version_code", "in", "2")), cond("version_code", "in", "3"))},
		{"parentheses", "version_name:in:1 AND (version_code:in:2 OR version_code:in:3)",
			group(FilterAnd, cond("version_name", "in", "1"), group(FilterOr, cond("version_code", "in", "2"), cond("version_code", "in", "3")))},
		{"group of one", "(version_name:contains:beta)", group(FilterAnd, cond("version_name", "contains", "beta"))},
		{"redundant parentheses", "((version_name:contains:beta))", group(FilterAnd, cond("version_name", "contains", "beta"))},
		{"outer group is the group", "(version_name:in:1 OR version_name:in:2)", group(FilterOr, cond("version_name", "in", "1"), cond("version_name", "in", "2"))},
		{"quoted", `version_name:in:["1.2 (beta)","a\"b\\c",plain]`, cond("version_name", "in", "1.2 (beta)", `a"b\c`, "plain")},
		{"value android is not AND", "version_name:starts_with:android", cond("version_name", "starts_with", "android")},
		{"value AND", "version_name:in:AND", cond("version_name", "in", "AND")},
		{"unicode", "version_name:contains:βeta🚀", cond("version_name", "contains", "βeta🚀")},
		{"spaces around", "  version_name:in:1  ", cond("version_name", "in", "1")},
		{"punctuation in a word", "version_name:in:1.2.0-beta+7_x/y", cond("version_name", "in", "1.2.0-beta+7_x/y")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, err := ParseFilterExpr(c.text, BuildsEntity)
			if err != nil {
				t.Fatalf("ParseFilterExpr(%q): %v", c.text, err)
			}
			if got := withoutSpans(*x); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("ParseFilterExpr(%q) =\n %+v, want\n %+v", c.text, got, c.want)
			}
			back, err := ParseFilterExpr(x.String(), BuildsEntity)
			if err != nil || !reflect.DeepEqual(withoutSpans(*back), c.want) {
				t.Fatalf("String() %q does not read back: %v", x.String(), err)
			}
		})
	}
}

func TestFilterExprSpans(t *testing.T) {
	text := `version_name:in:1 AND (mapping_type:in:["dsym",proguard]) OR patch_id:is_set`
	x, err := ParseFilterExpr(text, BuildsEntity)
	if err != nil {
		t.Fatal(err)
	}
	var spans []string
	var walk func(x FilterExpr)
	walk = func(x FilterExpr) {
		if x.Logic == "" {
			spans = append(spans, string([]rune(text)[x.Cond.Span.Start:x.Cond.Span.End]))
		}
		for _, c := range x.Children {
			walk(c)
		}
	}
	walk(*x)
	want := []string{"version_name:in:1", `mapping_type:in:["dsym",proguard]`, "patch_id:is_set"}
	if !reflect.DeepEqual(spans, want) {
		t.Fatalf("spans cover %q, want %q", spans, want)
	}
	// Spans count characters, not bytes.
	x, err = ParseFilterExpr("version_name:in:é AND version_name:in:x", BuildsEntity)
	if err != nil {
		t.Fatal(err)
	}
	if got := x.Children[1].Cond.Span; got != (TextSpan{Start: 22, End: 39}) {
		t.Fatalf("span after é = %+v, want 22..39", got)
	}
}

// issueOf parses text and returns its issues, failing when it parses.
func issuesOf(t *testing.T, text string) []FilterIssue {
	t.Helper()
	x, err := ParseFilterExpr(text, BuildsEntity)
	var fe *FilterExprError
	if !errors.As(err, &fe) {
		t.Fatalf("ParseFilterExpr(%q) = %v, %v; want a *FilterExprError", text, x, err)
	}
	if len(fe.Issues) == 0 {
		t.Fatalf("ParseFilterExpr(%q): an error without issues", text)
	}
	return fe.Issues
}

func TestFilterExprIssues(t *testing.T) {
	deep := "version_name:in:1 AND (version_name:in:2 AND (version_name:in:3 AND (version_name:in:4 AND version_name:in:5)))"
	many := strings.Repeat("version_name:in:1 OR ", FilterExprMaxConditions) + "version_name:in:1"
	values := "version_name:in:[" + strings.Repeat("a,", FilterExprMaxValues) + "a]"
	cases := []struct {
		name, text string
		span       *TextSpan // of the first issue
		contains   []string  // in its message
	}{
		// Parse errors: no span, the message names the place.
		{"empty", "   ", nil, []string{"empty"}},
		{"too long", strings.Repeat("a", FilterExprMaxBytes+1), nil, []string{"4097 bytes", "4096"}},
		{"invalid UTF-8", "version_name:in:\xff", nil, []string{"UTF-8"}},
		{"no operator", "version_name", nil, []string{`"version_name"`, "needs an operator", "character 0"}},
		{"no operator before space", "version_code:in:1 AND version_name in", nil, []string{`"version_name"`, "character 22"}},
		{"missing value", "version_name:in:", nil, []string{"value", "character 16"}},
		{"space before value", "version_name:in: 1", nil, []string{`" "`, "character 16"}},
		{"unclosed list", "version_name:in:[1,2", nil, []string{"List of values opened at character 16"}},
		{"empty list", "version_name:in:[]", nil, []string{`"]"`, "character 17"}},
		{"bad list separator", "version_name:in:[1 2]", nil, []string{`"2"`, "list of values", "character 19"}},
		{"unclosed quote", `version_name:in:"1.2`, nil, []string{"Quoted value opened at character 16"}},
		{"unknown escape", `version_name:in:"a\nb"`, nil, []string{`\n`, "character 18"}},
		{"unclosed group", "(version_name:in:1", nil, []string{"Group opened at character 0"}},
		{"stray close", "version_name:in:1)", nil, []string{`")"`, "character 17"}},
		{"missing joiner", "version_name:in:1 version_code:in:2", nil, []string{`"version_code"`, "AND or OR"}},
		{"dangling AND", "version_name:in:1 AND", nil, []string{"ends where a condition"}},
		{"empty group", "()", nil, []string{`")"`, "key"}},
		// Whole-filter limits: no span.
		{"too deep", deep, nil, []string{"deeper than 4"}},
		{"too many conditions", many, nil, []string{"more than 32 conditions"}},
		// Condition issues: the condition's span.
		{"unknown key", "version_code:in:1 AND os_name:in:android", &TextSpan{22, 40}, []string{`"os_name"`, "version_name"}},
		{"operator of another key", "version_code:contains:1", &TextSpan{0, 23}, []string{`"version_code"`, `"contains"`}},
		{"unknown operator", "version_name:eq:1", &TextSpan{0, 17}, []string{`"eq"`}},
		{"in without value", "version_name:in", &TextSpan{0, 15}, []string{`"in"`, "needs a value"}},
		{"contains two values", "version_name:contains:[a,b]", &TextSpan{0, 27}, []string{"one value", "2"}},
		{"is_set with value", "patch_id:is_set:x", &TextSpan{0, 17}, []string{"no value"}},
		{"empty quoted value", `version_name:in:""`, &TextSpan{0, 18}, []string{"empty value"}},
		{"enum value", "mapping_type:in:[dsym,zip]", &TextSpan{0, 26}, []string{`"zip"`, "proguard"}},
		{"uuid value", "patch_id:in:nope", &TextSpan{0, 16}, []string{`"nope"`, "id"}},
		{"too many values", values, &TextSpan{0, len(values)}, []string{"201 values", "200"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := issuesOf(t, c.text)
			got := is[0]
			if !reflect.DeepEqual(got.Span, c.span) {
				t.Errorf("span %+v, want %+v (message %q)", got.Span, c.span, got.Message)
			}
			for _, s := range c.contains {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q does not contain %q", got.Message, s)
				}
			}
		})
	}
	// Every bad condition is reported, each with its own span.
	is := issuesOf(t, "os_name:in:a OR version_code:in:1 OR mapping_type:in:zip")
	if len(is) != 2 || *is[0].Span != (TextSpan{0, 12}) || *is[1].Span != (TextSpan{37, 56}) {
		t.Fatalf("issues %+v, want two with spans 0..12 and 37..56", is)
	}
	// At the limits exactly, a filter is fine.
	for _, text := range []string{
		"version_name:in:1 AND (version_name:in:2 AND (version_name:in:3 AND version_name:in:4))",
		strings.Repeat("version_name:in:1 OR ", FilterExprMaxConditions-1) + "version_name:in:1",
		"version_name:in:[" + strings.Repeat("a,", FilterExprMaxValues-1) + "a]",
	} {
		if _, err := ParseFilterExpr(text, BuildsEntity); err != nil {
			t.Errorf("ParseFilterExpr at a limit: %v", err)
		}
	}
}

func TestFilterExprMatch(t *testing.T) {
	m := Mapping{VersionName: "1.2.0-Beta", VersionCode: "120", Type: "proguard"}
	cases := []struct {
		text string
		want bool
	}{
		{"version_name:in:1.2.0-Beta", true},
		{"version_name:in:1.2.0-beta", false}, // in is exact
		{"version_name:not_in:[1.0,2.0]", true},
		{"version_name:not_in:1.2.0-Beta", false},
		{"version_name:contains:beta", true}, // contains folds A-Z
		{"version_name:contains:BETA", true},
		{"version_name:contains:gamma", false},
		{"version_name:starts_with:1.2", true},
		{"version_name:starts_with:2", false},
		{"version_code:in:[119,120]", true},
		{"version_code:not_in:120", false},
		{"mapping_type:in:proguard", true},
		{"mapping_type:not_in:[proguard,dsym]", false},
		{"mapping_type:in:dsym", false},
		// svc has no patch builds: patch keys are never set.
		{"patch_version:in:1", false},
		{"patch_version:not_in:1", true},
		{"patch_version:contains:1", false},
		{"patch_id:in:3f2a0c1e-8b7d-4e5f-9a6b-0c1d2e3f4a5b", false},
		{"patch_id:not_in:3f2a0c1e-8b7d-4e5f-9a6b-0c1d2e3f4a5b", true},
		{"patch_id:is_set", false},
		{"patch_id:is_not_set", true},
		{"mapping_type:in:dsym OR version_code:in:120", true},
		{"mapping_type:in:dsym AND version_code:in:120", false},
		{"(mapping_type:in:dsym OR version_code:in:120) AND patch_id:is_not_set", true},
	}
	for _, c := range cases {
		x, err := ParseFilterExpr(c.text, BuildsEntity)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		if got := x.MatchMapping(m); got != c.want {
			t.Errorf("%s matches %+v: %v, want %v", c.text, m, got, c.want)
		}
	}
	var none *FilterExpr
	if !none.MatchMapping(m) {
		t.Error("a nil filter must match every mapping")
	}
}

// FuzzFilterExpr checks that any text either parses into a tree that String writes back to the
// same tree, within the limits, or is refused with issues whose spans lie inside the text.
func FuzzFilterExpr(f *testing.F) {
	for _, s := range []string{
		"version_name:in:1.2.0", `version_name:in:["a b","c\"d\\e"] AND (mapping_type:not_in:dsym OR patch_id:is_set)`,
		"version_code:in:[1,2,3] or version_name:starts_with:x", "((version_name:contains:é))", "(", `"`, "a:b:[", "os_name:in:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		x, err := ParseFilterExpr(text, BuildsEntity)
		if err != nil {
			var fe *FilterExprError
			if !errors.As(err, &fe) || len(fe.Issues) == 0 {
				t.Fatalf("ParseFilterExpr(%q): %v is not a *FilterExprError with issues", text, err)
			}
			n := len([]rune(text))
			for _, is := range fe.Issues {
				if is.Message == "" {
					t.Fatalf("ParseFilterExpr(%q): an issue without a message", text)
				}
				if s := is.Span; s != nil && (s.Start < 0 || s.End > n || s.Start >= s.End) {
					t.Fatalf("ParseFilterExpr(%q): span %+v outside the text", text, *s)
				}
			}
			return
		}
		out := x.String()
		back, err := ParseFilterExpr(out, BuildsEntity)
		if err != nil {
			t.Fatalf("String() of %q is %q, which does not parse: %v", text, out, err)
		}
		if !reflect.DeepEqual(withoutSpans(*x), withoutSpans(*back)) {
			t.Fatalf("%q and its String() %q parse differently", text, out)
		}
		if back.String() != out {
			t.Fatalf("String() is not stable: %q then %q", out, back.String())
		}
	})
}
