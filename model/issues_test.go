package model

import (
	"reflect"
	"strings"
	"testing"
)

// issueEvents are one event of each kind the issue vocabulary tells apart, by name.
func issueEvents() map[string]*Event {
	ev := func(typ string, fatal bool, sev string) *Event {
		return &Event{Type: typ, Timestamp: 5, Facts: EventFacts{GroupID: "0123456789abcdef0123456789abcdef", Fatal: fatal,
			Issue: IssueDisplay{Type: "T", Severity: sev}}}
	}
	return map[string]*Event{
		"crash":           ev("exception", true, "fatal"),      // severity fatal, or legacy handled: false
		"unhandled":       ev("exception", false, "unhandled"), // not caught, not fatal
		"handled":         ev("exception", false, "handled"),   // severity handled, or legacy handled: true
		"other severity":  ev("exception", false, "error"),     // a severity outside the vocabulary
		"anr":             ev("anr", false, ""),
		"no group":        {Type: "exception", Timestamp: 5, Facts: EventFacts{Fatal: true, Issue: IssueDisplay{Severity: "fatal"}}},
		"not an issue":    {Type: "gesture_click", Timestamp: 5},
		"crash, too late": {Type: "exception", Timestamp: 50, Facts: EventFacts{GroupID: "0123456789abcdef0123456789abcdef", Fatal: true, Issue: IssueDisplay{Severity: "fatal"}}},
	}
}

// TestIssueKinds maps each combination of type and severity the dashboards send, and svc's own
// names, to the events it selects (IssueKinds, then MatchIssue), to what ByClass says of it (the
// live answer) and to the 400 of a bad value.
func TestIssueKinds(t *testing.T) {
	events := issueEvents()
	cases := []struct {
		types, sev []string
		classes    []IssueClass
		selects    []string // the events of issueEvents selected, sorted
		byClass    []IssueClass
		live       bool
		err        string
	}{
		// Nothing sent: every class.
		{nil, nil, AllIssueClasses, []string{"anr", "crash", "handled", "other severity", "unhandled"}, AllIssueClasses, true, ""},
		// The reference dashboard's default: exceptions that crashed, and every ANR.
		{[]string{"error", "anr"}, []string{"fatal"}, []IssueClass{ClassCrash, ClassHandled, ClassANR}, []string{"anr", "crash"},
			[]IssueClass{ClassCrash, ClassANR}, true, ""},
		{[]string{"error", "anr"}, nil, []IssueClass{ClassCrash, ClassHandled, ClassANR}, []string{"anr", "crash", "handled", "other severity", "unhandled"},
			[]IssueClass{ClassCrash, ClassHandled, ClassANR}, true, ""},
		{[]string{"error", "anr"}, []string{"fatal", "unhandled", "handled"}, []IssueClass{ClassCrash, ClassHandled, ClassANR},
			[]string{"anr", "crash", "handled", "unhandled"}, nil, false, ""},
		// An ANR is selected by its type whatever the severities.
		{[]string{"anr"}, []string{"handled"}, []IssueClass{ClassANR}, []string{"anr"}, []IssueClass{ClassANR}, true, ""},
		{[]string{"crash", "anr"}, []string{"unhandled"}, []IssueClass{ClassCrash, ClassANR}, []string{"anr"}, []IssueClass{ClassANR}, true, ""},
		{[]string{"crash"}, []string{"fatal", "handled"}, []IssueClass{ClassCrash}, []string{"crash"}, []IssueClass{ClassCrash}, true, ""},
		{[]string{"anr"}, []string{"fatal"}, []IssueClass{ClassANR}, []string{"anr"}, []IssueClass{ClassANR}, true, ""},
		{[]string{"anr"}, nil, []IssueClass{ClassANR}, []string{"anr"}, []IssueClass{ClassANR}, true, ""},
		// error: exceptions, narrowed by the severities.
		{[]string{"error"}, []string{"unhandled", "handled"}, []IssueClass{ClassCrash, ClassHandled}, []string{"handled", "unhandled"}, nil, false, ""},
		{[]string{"error"}, []string{"fatal"}, []IssueClass{ClassCrash, ClassHandled}, []string{"crash"}, []IssueClass{ClassCrash}, true, ""},
		{[]string{"error"}, []string{"unhandled"}, []IssueClass{ClassCrash, ClassHandled}, []string{"unhandled"}, nil, false, ""},
		{[]string{"error"}, nil, []IssueClass{ClassCrash, ClassHandled}, []string{"crash", "handled", "other severity", "unhandled"},
			[]IssueClass{ClassCrash, ClassHandled}, true, ""},
		// A severity without a type: exceptions only (an ANR has no severity to match).
		{nil, []string{"fatal"}, []IssueClass{ClassCrash, ClassHandled}, []string{"crash"}, []IssueClass{ClassCrash}, true, ""},
		{nil, []string{"handled"}, []IssueClass{ClassCrash, ClassHandled}, []string{"handled"}, nil, false, ""},
		// svc's own names keep their meaning.
		{[]string{"crash"}, nil, []IssueClass{ClassCrash}, []string{"crash"}, []IssueClass{ClassCrash}, true, ""},
		{[]string{"handled"}, nil, []IssueClass{ClassHandled}, []string{"handled", "other severity", "unhandled"}, []IssueClass{ClassHandled}, true, ""},
		{[]string{"crash", "anr", "handled"}, nil, []IssueClass{ClassCrash, ClassANR, ClassHandled}, []string{"anr", "crash", "handled", "other severity", "unhandled"},
			[]IssueClass{ClassCrash, ClassANR, ClassHandled}, true, ""},
		{[]string{"handled"}, []string{"fatal"}, []IssueClass{ClassHandled}, nil, nil, false, ""}, // selects nothing: the store answers []
		{[]string{"crash", "error", "crash"}, nil, []IssueClass{ClassCrash, ClassHandled}, []string{"crash", "handled", "other severity", "unhandled"},
			[]IssueClass{ClassCrash, ClassHandled}, true, ""},
		// Bad values are named.
		{[]string{"error", "fatal"}, nil, nil, nil, nil, false, `type "fatal" is not one of error, anr, crash, handled`},
		{[]string{"Error"}, nil, nil, nil, nil, false, `type "Error"`},
		{nil, []string{"crash"}, nil, nil, nil, false, `severity "crash" is not one of fatal, unhandled, handled`},
		{[]string{"anr"}, []string{""}, nil, nil, nil, false, `severity ""`},
	}
	for _, c := range cases {
		name := "type=" + strings.Join(c.types, ",") + "&severity=" + strings.Join(c.sev, ",")
		classes, sev, err := IssueKinds(c.types, c.sev)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %s", name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(classes, c.classes) {
			t.Errorf("%s: classes %v, want %v", name, classes, c.classes)
		}
		q := IssueQuery{EventFilter: EventFilter{From: 0, To: 10}, Classes: classes, Severities: sev}
		var got []string
		for _, n := range []string{"anr", "crash", "crash, too late", "handled", "no group", "not an issue", "other severity", "unhandled"} {
			if q.MatchIssue(events[n]) {
				got = append(got, n)
			}
		}
		if !reflect.DeepEqual(got, c.selects) {
			t.Errorf("%s: selects %q, want %q", name, got, c.selects)
		}
		bc, live := q.ByClass()
		if live != c.live || !reflect.DeepEqual(bc, c.byClass) {
			t.Errorf("%s: ByClass %v %v, want %v %v", name, bc, live, c.byClass, c.live)
		}
		if live { // the classes alone select what the severities did
			byq := IssueQuery{EventFilter: q.EventFilter, Classes: bc}
			for n, e := range events {
				if byq.MatchIssue(e) != q.MatchIssue(e) {
					t.Errorf("%s: ByClass %v and the query disagree on %s", name, bc, n)
				}
			}
		}
	}
	// The default list is a copy: changing an answer does not change the next one.
	a, _, _ := IssueKinds(nil, nil)
	a[0] = ClassHandled
	if b, _, _ := IssueKinds(nil, nil); b[0] != ClassCrash {
		t.Errorf("IssueKinds shares AllIssueClasses: %v", b)
	}
}
