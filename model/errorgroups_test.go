package model

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestAppleErrorFields(t *testing.T) {
	num := func(n int64) *int64 { return &n }
	cases := []struct {
		name    string
		payload string
		code    string
		numCode *int64
		meta    string
	}{
		{"jvm exception", `{"handled":false,"exceptions":[{"type":"E","frames":[]}]}`, "", nil, ""},
		{"ns error", `{"error":{"code":"NSURLErrorDomain","numcode":-1009,"meta":{"b":"x\/y","a":1}}}`, "NSURLErrorDomain", num(-1009), `{"a":1,"b":"x/y"}`},
		{"empty meta", `{"error":{"code":"D","numcode":0,"meta":{}}}`, "D", num(0), ""},
		{"numcode of the wrong kind", `{"error":{"code":"D","numcode":"7","meta":null}}`, "D", nil, ""},
		{"error of the wrong kind", `{"error":"boom"}`, "", nil, ""},
		{"not an object", `[1]`, "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, n, meta := AppleErrorFields([]byte(c.payload))
			if code != c.code || !reflect.DeepEqual(n, c.numCode) || string(meta) != c.meta {
				t.Errorf("got %q, %v, %s; want %q, %v, %s", code, n, meta, c.code, c.numCode, c.meta)
			}
		})
	}
}

func TestErrorGroupStep(t *testing.T) {
	exc := func(extra string) string {
		return `{` + extra + `"exceptions":[{"type":"java.lang.IllegalStateException","message":"boom","frames":[]}]}`
	}
	cases := []struct {
		name, typ, payload, want string
	}{
		{"crash", "exception", exc(`"handled":false,"severity":"fatal",`), "Crash: java.lang.IllegalStateException - boom"},
		{"unhandled", "exception", exc(`"handled":false,"severity":"unhandled",`), "Unhandled error: java.lang.IllegalStateException - boom"},
		{"handled", "exception", exc(`"handled":true,"severity":"handled",`), "Handled error: java.lang.IllegalStateException - boom"},
		{"legacy handled", "exception", exc(`"handled":true,`), "Handled error: java.lang.IllegalStateException - boom"},
		{"legacy crash", "exception", exc(`"handled":false,`), "Crash: java.lang.IllegalStateException - boom"},
		{"anr", "anr", `{"exceptions":[{"type":"sh.measure.android.anr.AnrError","message":"blocked","frames":[]}]}`, "ANR: sh.measure.android.anr.AnrError - blocked"},
		{"other kinds as StepOf", "custom", `{"name":"checkout"}`, "Custom event: checkout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := Event{Type: c.typ, Payload: []byte(c.payload), Attribute: Attributes{ThreadName: "main"}}
			st, ok := ErrorGroupStep(&e)
			if !ok || st.Description != c.want || st.Type != c.typ || st.ThreadName != "main" {
				t.Errorf("got %+v, %v; want description %q", st, ok, c.want)
			}
		})
	}
	if _, ok := ErrorGroupStep(&Event{Type: "cpu_usage", Payload: []byte(`{}`)}); ok {
		t.Error("a cpu sample is a step")
	}
}

func TestMergePathSessions(t *testing.T) {
	sess := func(n int) uuid.UUID { return uuid.MustParse(fmt.Sprintf("00000000-0000-4000-8000-%012d", n)) }
	// path is a session's events ending with its issue at ts (id n*100+ts, so ties order by id).
	path := func(s int, ts int64, id int) []Event {
		return []Event{{SessionID: sess(s), Timestamp: ts - 1, ID: sess(1000 + id)}, {SessionID: sess(s), Timestamp: ts, ID: sess(id)}}
	}
	show := func(ps [][]Event) string {
		var b []string
		for _, p := range ps {
			last := p[len(p)-1]
			b = append(b, fmt.Sprintf("s%s@%d", last.SessionID.String()[33:], last.Timestamp))
		}
		return strings.Join(b, " ")
	}
	cases := []struct {
		name    string
		n       int
		answers [][][]Event
		want    string
	}{
		{"nothing", 5, [][][]Event{nil, {}, nil}, ""},
		{"one class", 5, [][][]Event{{path(1, 30, 1), path(2, 20, 2)}}, "s001@30 s002@20"},
		{"classes interleave", 5, [][][]Event{{path(1, 30, 1), path(2, 10, 2)}, {path(3, 20, 3)}}, "s001@30 s003@20 s002@10"},
		{"a session in two classes keeps its latest issue", 5, [][][]Event{{path(1, 10, 1)}, {path(1, 40, 4), path(2, 20, 2)}}, "s001@40 s002@20"},
		{"at most n", 2, [][][]Event{{path(1, 30, 1), path(2, 10, 2)}, {path(3, 20, 3)}}, "s001@30 s003@20"},
		{"ties by id, greater first", 5, [][][]Event{{path(1, 10, 5)}, {path(2, 10, 7)}}, "s002@10 s001@10"},
		{"empty paths dropped", 5, [][][]Event{{{}, path(1, 10, 1)}}, "s001@10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := show(MergePathSessions(c.n, c.answers...)); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
