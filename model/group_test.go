package model

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// md5Hex is the expected group id of a documented fingerprint string, computed independently of
// the code under test.
func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// compactFixture returns a fixture file as the compact JSON an Event payload holds.
func compactFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, readFixture(tb, name)); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return b.Bytes()
}

// TestGroupOfFragments checks every exception/anr body fixture against the fingerprint string
// docs/architecture.md ("Algorithms") gives for it, written out by hand from the fixture text.
func TestGroupOfFragments(t *testing.T) {
	cases := []struct {
		file, kind string
		fp         string // the documented fingerprint input
		want       Group  // display fields (ID is md5Hex(fp))
	}{
		{"fragment_anr-body_jvm_backend-testdata.json", "anr",
			"sh.measure.android.anr.AnrError:deadLock$lambda$10:ExceptionDemoActivity.kt",
			Group{Framework: "jvm", Type: "sh.measure.android.anr.AnrError", Message: "Application Not Responding for at least 5000 ms.",
				MethodName: "deadLock$lambda$10", FileName: "ExceptionDemoActivity.kt", LineNumber: 66}},
		// Apple: the first in_app frame (index 2) of exceptions[0], type is the signal.
		{"fragment_exception-body_apple-1_backend-testdata.json", "exception",
			"SIGABRT:uncaught_exception_handler:PLCrashReporter.m",
			Group{Framework: "apple", Type: "SIGABRT", Message: "*** -[__NSArray0 objectAtIndex:]: index 1 beyond bounds for empty array",
				MethodName: "uncaught_exception_handler", FileName: "PLCrashReporter.m", LineNumber: 361, Fatal: true, Severity: "fatal"}},
		{"fragment_exception-body_apple-2_backend-testdata.json", "exception",
			"SIGABRT:_ZN5swift28swift_Concurrency_fatalErrorEjPKcz:MeasureHomeScreen.swift",
			Group{Framework: "apple", Type: "SIGABRT", MethodName: "_ZN5swift28swift_Concurrency_fatalErrorEjPKcz",
				FileName: "MeasureHomeScreen.swift", LineNumber: 65, Fatal: true, Severity: "fatal"}},
		// Unsymbolicated Apple frames carry no method or file: the signal alone.
		{"fragment_exception-body_apple-abort_symbolicator-input.json", "exception", "SIGABRT",
			Group{Framework: "apple", Type: "SIGABRT", Fatal: true, Severity: "fatal"}},
		{"fragment_exception-body_apple-nsexception_symbolicator-input.json", "exception", "SIGABRT",
			Group{Framework: "apple", Type: "SIGABRT", Message: "*** -[__NSArray0 objectAtIndex:]: index 1 beyond bounds for empty array",
				Fatal: true, Severity: "fatal"}},
		// Dart: exceptions[0] and its first frame, not the inner unit.
		{"fragment_exception-body_dart-nested_backend-testdata.json", "exception",
			"MissingPluginException:MethodChannel._invokeMethod:platform_channel.dart",
			Group{Framework: "dart", Type: "MissingPluginException",
				Message:    "(No implementation found for method non_existent_method on channel non_existent_channel)",
				MethodName: "MethodChannel._invokeMethod", FileName: "platform_channel.dart", LineNumber: 368, Fatal: true, Severity: "fatal"}},
		// A Dart unit without a type: the key starts with the separator.
		{"fragment_exception-body_dart_backend-testdata.json", "exception", ":MainScreen._trackError:main.dart",
			Group{Framework: "dart", MethodName: "MainScreen._trackError", FileName: "main.dart", LineNumber: 119, Fatal: true, Severity: "fatal"}},
		{"fragment_exception-body_ios-abort_ios-sdk-test.json", "exception", "SIGABRT",
			Group{Framework: "apple", Type: "SIGABRT", Fatal: true, Severity: "fatal"}},
		{"fragment_exception-body_ios-background-thread_ios-sdk-test.json", "exception", "SIGABRT",
			Group{Framework: "apple", Type: "SIGABRT", Message: "*** -[__NSArray0 objectAtIndex:]: index 1 beyond bounds for empty array",
				Fatal: true, Severity: "fatal"}},
		// No framework and no signal: jvm, the innermost (only) unit.
		{"fragment_exception-body_ios-flutter-background_ios-sdk-test.json", "exception", ":_throwException:main.dart",
			Group{Framework: "jvm", MethodName: "_throwException", FileName: "main.dart", LineNumber: 84, Severity: "handled"}},
		{"fragment_exception-body_ios-flutter-handled_ios-sdk-test.json", "exception", ":_throwException:main.dart",
			Group{Framework: "jvm", MethodName: "_throwException", FileName: "main.dart", LineNumber: 84, Severity: "handled"}},
		// framework "ios" is apple; no signal, no in_app frame: the first frame of exceptions[0].
		{"fragment_exception-body_ios-flutter-obfuscated_ios-sdk-test.json", "exception", "",
			Group{Framework: "apple", Fatal: true, Severity: "fatal"}},
		{"fragment_exception-body_ios-flutter-unobfuscated_ios-sdk-test.json", "exception", ":_throwException:main.dart",
			Group{Framework: "apple", MethodName: "_throwException", FileName: "main.dart", LineNumber: 84, Fatal: true, Severity: "fatal"}},
		// JS: type, message, then the frame (here a file without a method).
		{"fragment_exception-body_ios-rn-js-fatal_ios-sdk-test.json", "exception",
			"Error:Simulated JavaScript exception:app:///index.android.bundle",
			Group{Framework: "js", Type: "Error", Message: "Simulated JavaScript exception", FileName: "app:///index.android.bundle",
				LineNumber: 1, Fatal: true, Severity: "fatal"}},
		{"fragment_exception-body_js_backend-testdata.json", "exception",
			"TypeError:Cannot read property 'foo' of undefined:render:App.js",
			Group{Framework: "js", Type: "TypeError", Message: "Cannot read property 'foo' of undefined", MethodName: "render",
				FileName: "App.js", LineNumber: 42, Fatal: true, Severity: "fatal"}},
		// JVM nested: the innermost (last) of four units.
		{"fragment_exception-body_jvm-nested_backend-testdata.json", "exception",
			"sh.measure.sample.CustomException:onCreate$lambda$1:ExceptionDemoActivity.kt",
			Group{Framework: "jvm", Type: "sh.measure.sample.CustomException", Message: "This is a nested custom exception",
				MethodName: "onCreate$lambda$1", FileName: "ExceptionDemoActivity.kt", LineNumber: 23, Fatal: true, Severity: "fatal"}},
		{"fragment_exception-body_jvm_backend-testdata.json", "exception",
			"java.lang.OutOfMemoryError:onCreate$lambda$2:ExceptionDemoActivity.kt",
			Group{Framework: "jvm", Type: "java.lang.OutOfMemoryError",
				Message:    "Failed to allocate a 104857616 byte allocation with 25165824 free bytes and 87MB until OOM, target footprint 134540152, growth limit 201326592",
				MethodName: "onCreate$lambda$2", FileName: "ExceptionDemoActivity.kt", LineNumber: 29, Fatal: true, Severity: "fatal"}},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			g, ok := GroupOf(&Event{Type: c.kind, Payload: compactFixture(t, c.file)})
			if !ok {
				t.Fatal("GroupOf: not ok")
			}
			want := c.want
			want.ID, want.Kind = md5Hex(c.fp), c.kind
			if g != want {
				t.Errorf("got  %+v\nwant %+v", g, want)
			}
			// The pretty-printed file gives the same group as its compact form.
			if g2, _ := GroupOf(&Event{Type: c.kind, Payload: readFixture(t, c.file)}); g2 != g {
				t.Errorf("pretty-printed payload: %+v", g2)
			}
		})
	}
	// Every fragment fixture is covered.
	names, _ := filepath.Glob(filepath.Join(fixturesDir(t), "fragment_*"))
	for _, n := range names {
		if !seen[filepath.Base(n)] {
			t.Errorf("fixture %s has no case", filepath.Base(n))
		}
	}
}

// TestGroupOfReferenceFingerprint compares with the fingerprints the reference backend computed
// into its Apple test data (its JVM test data predates MD5 fingerprints).
func TestGroupOfReferenceFingerprint(t *testing.T) {
	names, _ := filepath.Glob(filepath.Join(fixturesDir(t), "fragment_*backend-testdata.json"))
	checked := 0
	for _, n := range names {
		body := readFixture(t, filepath.Base(n))
		var ref struct{ Fingerprint string }
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatal(err)
		}
		if len(ref.Fingerprint) != 32 {
			continue
		}
		kind := "exception"
		if strings.Contains(n, "anr-body") {
			kind = "anr"
		}
		g, _ := GroupOf(&Event{Type: kind, Payload: body})
		if g.ID != ref.Fingerprint {
			t.Errorf("%s: id %s, reference %s", filepath.Base(n), g.ID, ref.Fingerprint)
		}
		checked++
	}
	if checked < 2 {
		t.Fatalf("only %d fixtures carry a reference fingerprint", checked)
	}
}

// TestGroupOfEvents runs every exception and anr event of the batch and single-event fixtures
// through the ingest decoder and GroupOf, so payloads are exactly what the store keeps.
func TestGroupOfEvents(t *testing.T) {
	want := map[string]struct{ fw, fp string }{
		"1d84ef75-2e7f-4901-9d87-e97a20b7d39f": {"dart", "String:MainScreen._throwString:screen_main.dart"},
		"c934cf57-1b55-4bbe-89a6-1a5e689f55b6": {"jvm", "O0.b:nativePollOnce:MessageQueue.java"},
		"0cd61e0b-ccb4-48a2-b6e3-42e857845ca5": {"dart", "ZK"}, // obfuscated: no method or file
		"045bbcb6-781e-4637-bffe-35da61c486c4": {"jvm", "java.lang.IllegalAccessException:onClick:SourceFile"},
		"30cfbd79-f448-428a-aa98-e7544c2d863a": {"jvm", "java.lang.IllegalAccessException:k:SourceFile"},
		"decbedd9-12eb-4a7b-b74c-156843b7495c": {"jvm", "kotlinx.serialization.json.internal.JsonDecodingException:JsonDecodingException:JsonExceptions.kt"},
		"fa36b479-b6ca-47e5-b968-2511bfb8b00e": {"apple", "SIGTRAP"},
		"ea4b945e-a681-43d8-8b5e-37c8fff08601": {"dart", "ArgumentError:_MainScreenState._trackError:screen_main.dart"},
		"55e37029-3a95-4ea8-9089-8c9abee29a12": {"js", "Error:Simulated handled error:trackHandledError:app:///main.jsbundle"},
		"aec9496e-6cb9-4ec7-8fe6-9829b7ff1db1": {"js", "Error:Simulated handled error:trackHandledError:app:///main.jsbundle"},
		"662ab9e6-faa6-46cf-9551-4401169ace2d": {"js", "Error:Simulated unhandled promise rejection:simulateUnhandledPromiseRejection:app:///main.jsbundle"},
		"b5dbb4b1-42d4-4951-8f34-6dfc3ca68428": {"js", "Error:Simulated unhandled promise rejection:simulateUnhandledPromiseRejection:app:///main.jsbundle"},
		"471d320e-7ccd-46a8-bb0a-180ef65cccc6": {"js", "Error:Simulated JavaScript exception:simulateJSException:app:///main.jsbundle"},
		"839afe69-49e4-490d-9378-deaddf96713d": {"apple", "SIGABRT"},
		"62fd64c5-6613-4378-bdcf-d83e1e617c1f": {"apple", "SIGABRT"},
		"1811075d-488a-4e07-b0d9-021da466e953": {"dart", "FormatException"},
		"44d77008-4c38-4238-bd76-0cb55d7f79e5": {"jvm", "w9.i:onClick:r8-map-id-5f120b04dbc4ea90be570727908ee9e0a49f3a51f6e65c823c02dd407d06b1a9"},
		"0b5a3f14-6f8a-4708-9a17-917afb65d631": {"jvm", "java.lang.IllegalAccessException:onClick:r8-map-id-5f120b04dbc4ea90be570727908ee9e0a49f3a51f6e65c823c02dd407d06b1a9"},
		"cee6f4cc-b735-49e6-b052-fbaae3ec205e": {"js", "Error:Simulated unhandled promise rejection:simulateUnhandledPromiseRejection:app:///main.jsbundle"},
	}
	var events []Event
	for name, body := range fixtureBatches(t) {
		b, err := DecodeBatch(body, testApp, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		events = append(events, b.Events...)
	}
	// Single events: the no-attribute one is not a valid PUT /events item, so its member is
	// taken as is.
	names, _ := filepath.Glob(filepath.Join(fixturesDir(t), "event_*.json"))
	for _, n := range names {
		var raw struct {
			ID        string
			Exception json.RawMessage
		}
		if err := json.Unmarshal(readFixture(t, filepath.Base(n)), &raw); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_ = json.Compact(&b, raw.Exception)
		e := Event{Type: "exception", Payload: b.Bytes()}
		copy(e.ID[:], mustUUID(t, raw.ID))
		events = append(events, e)
	}
	got := 0
	for i := range events {
		e := &events[i]
		g, ok := GroupOf(e)
		if e.Type != "exception" && e.Type != "anr" {
			if ok {
				t.Errorf("%s event %s grouped", e.Type, e.ID)
			}
			continue
		}
		w, known := want[e.ID.String()]
		if !known {
			t.Errorf("no expectation for %s event %s", e.Type, e.ID)
			continue
		}
		got++
		if !ok || g.ID != md5Hex(w.fp) || g.Framework != w.fw || g.Kind != e.Type {
			t.Errorf("%s: got %+v, want framework %s id of %q", e.ID, g, w.fw, w.fp)
		}
		// Fatal agrees with the rule the session facts use.
		if f := FactsOf(e); e.Type == "exception" && f.Fatal != g.Fatal {
			t.Errorf("%s: Fatal %v, FactsOf %v", e.ID, g.Fatal, f.Fatal)
		}
	}
	if got != len(want) {
		t.Errorf("checked %d events, want %d", got, len(want))
	}
}

func mustUUID(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		t.Fatalf("bad uuid %q", s)
	}
	return b
}

// TestGroupOfEdges covers shapes the fixtures do not.
func TestGroupOfEdges(t *testing.T) {
	cases := []struct {
		name, kind, payload string
		fp                  string // "-" means GroupOf must say not ok
		check               func(Group) bool
	}{
		{"not a crash kind", "custom", `{"name":"x"}`, "-", nil},
		{"malformed", "exception", `{"exceptions":[`, "-", nil},
		{"not an object", "exception", `[1]`, "-", nil},
		{"no frames", "exception", `{"handled":false,"exceptions":[{"type":"E","message":"m","frames":[]}]}`, "E",
			func(g Group) bool {
				return g.Message == "m" && g.MethodName == "" && g.LineNumber == 0 && g.Framework == "jvm"
			}},
		{"null frames", "exception", `{"handled":false,"exceptions":[{"type":"E","frames":null}]}`, "E", nil},
		{"empty exceptions", "exception", `{"handled":false,"exceptions":[]}`, "",
			func(g Group) bool { return g.Framework == "jvm" && g.Fatal }},
		{"apple error without exceptions", "exception", `{"handled":true,"exceptions":[],"error":{"code":"NSURLErrorDomain","numcode":-1009}}`,
			"NSURLErrorDomain", func(g Group) bool { return g.Framework == "apple" && !g.Fatal && g.Severity == "handled" }},
		{"missing framework is jvm", "exception", `{"handled":false,"exceptions":[{"type":"Outer","frames":[{"method_name":"a","file_name":"A.kt"}]},{"type":"Inner","frames":[{"method_name":"b","file_name":"B.kt","line_num":7}]}]}`,
			"Inner:b:B.kt", func(g Group) bool { return g.LineNumber == 7 }},
		{"jvm explicit", "exception", `{"framework":"jvm","handled":false,"exceptions":[{"type":"X","signal":"SIGABRT","frames":[{"method_name":"m"}]}]}`,
			"X:m", nil},
		{"file only", "exception", `{"handled":false,"exceptions":[{"type":"E","frames":[{"file_name":"F.kt","line_num":3}]}]}`, "E:F.kt", nil},
		{"line numbers never count", "exception", `{"handled":false,"exceptions":[{"type":"E","frames":[{"method_name":"m","file_name":"F.kt","line_num":99999}]}]}`,
			"E:m:F.kt", func(g Group) bool { return g.LineNumber == 99999 }},
		{"negative line", "anr", `{"handled":false,"foreground":true,"exceptions":[{"type":"A","frames":[{"method_name":"m","file_name":"F.java","line_num":-2}]}]}`,
			"A:m:F.java", func(g Group) bool { return g.LineNumber == -2 && g.Kind == "anr" && !g.Fatal && g.Severity == "" }},
		{"anr ignores framework", "anr", `{"framework":"dart","exceptions":[{"type":"O","frames":[{"method_name":"o"}]},{"type":"I","frames":[{"method_name":"i"}]}]}`,
			"I:i", func(g Group) bool { return g.Framework == "jvm" }},
		{"apple in_app in a later unit", "exception", `{"framework":"apple","handled":false,"exceptions":[{"signal":"SIGSEGV","frames":[{"method_name":"sys","in_app":false}]},{"signal":"X","frames":[{"method_name":"mine","file_name":"A.swift","in_app":true,"line_num":5}]}]}`,
			"SIGSEGV:mine:A.swift", func(g Group) bool { return g.LineNumber == 5 }},
		{"apple first in_app frame wins", "exception", `{"framework":"apple","handled":false,"exceptions":[{"signal":"S","frames":[{"method_name":"a"},{"method_name":"b","in_app":true},{"method_name":"c","in_app":true}]}]}`,
			"S:b", nil},
		{"apple no frames at all", "exception", `{"framework":"apple","handled":false,"exceptions":[{"signal":"S","frames":[]}]}`, "S", nil},
		{"apple inferred from signal", "exception", `{"handled":false,"exceptions":[{"type":"T","signal":"SIGBUS","frames":[{"method_name":"f"}]}]}`,
			"SIGBUS:f", func(g Group) bool { return g.Framework == "apple" }},
		{"dart uses the outer unit", "exception", `{"framework":"dart","handled":false,"exceptions":[{"type":"O","message":"mo","frames":[{"method_name":"o"}]},{"type":"I","frames":[{"method_name":"i"}]}]}`,
			"O:o", func(g Group) bool { return g.Message == "mo" }},
		{"js without message", "exception", `{"framework":"js","severity":"unhandled","exceptions":[{"type":"Error","message":"","frames":[{"method_name":"f","file_name":"a.js"}]}]}`,
			"Error:f:a.js", func(g Group) bool { return !g.Fatal && g.Severity == "unhandled" }},
		{"js without frames", "exception", `{"framework":"js","severity":"fatal","exceptions":[{"type":"Error","message":"boom"}]}`,
			"Error:boom", func(g Group) bool { return g.Fatal }},
		{"escapes are decoded", "exception", `{"handled":false,"exceptions":[{"type":"a\"b\u00e9","message":"x\ny","frames":[{"method_name":"m\\n","file_name":"f\/g"}]}]}`,
			"a\"bé:m\\n:f/g", func(g Group) bool { return g.Type == "a\"bé" && g.Message == "x\ny" && g.FileName == "f/g" }},
		{"null members", "exception", `{"handled":false,"framework":null,"exceptions":[{"type":"E","message":null,"frames":[{"method_name":null,"file_name":"F","line_num":null,"in_app":null}]}]}`,
			"E:F", nil},
		{"handled true", "exception", `{"handled":true,"exceptions":[{"type":"E"}]}`, "E",
			func(g Group) bool { return !g.Fatal && g.Severity == "handled" }},
		{"severity wins over handled", "exception", `{"handled":false,"severity":"handled","exceptions":[{"type":"E"}]}`, "E",
			func(g Group) bool { return !g.Fatal && g.Severity == "handled" }},
		{"severity fatal", "exception", `{"handled":true,"severity":"fatal","exceptions":[{"type":"E"}]}`, "E",
			func(g Group) bool { return g.Fatal && g.Severity == "fatal" }},
		{"neither handled nor severity", "exception", `{"exceptions":[{"type":"E"}]}`, "E",
			func(g Group) bool { return !g.Fatal && g.Severity == "" }},
		{"fraction line", "exception", `{"handled":false,"exceptions":[{"type":"E","frames":[{"line_num":12.0}]}]}`, "E",
			func(g Group) bool { return g.LineNumber == 12 }},
		{"long key", "exception", `{"handled":false,"exceptions":[{"type":"` + strings.Repeat("T", 300) + `","frames":[{"method_name":"m"}]}]}`,
			strings.Repeat("T", 300) + ":m", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, ok := GroupOf(&Event{Type: c.kind, Payload: []byte(c.payload)})
			if c.fp == "-" {
				if ok {
					t.Fatalf("ok for %s", c.payload)
				}
				return
			}
			if !ok {
				t.Fatal("not ok")
			}
			if g.ID != md5Hex(c.fp) {
				t.Errorf("id %s is not md5(%q) = %s; group %+v", g.ID, c.fp, md5Hex(c.fp), g)
			}
			if c.check != nil && !c.check(g) {
				t.Errorf("group %+v", g)
			}
		})
	}
}

func TestGroupTitle(t *testing.T) {
	cases := []struct {
		g    Group
		want string
	}{
		{Group{Type: "java.lang.NullPointerException", FileName: "Main.kt"}, "java.lang.NullPointerException@Main.kt"},
		{Group{Type: "SIGABRT"}, "SIGABRT"},
		{Group{FileName: "a.js"}, "@a.js"},
	}
	for _, c := range cases {
		if got := c.g.Title(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.g, got, c.want)
		}
	}
}

// BenchmarkGroupOf measures grouping of the real crash bodies (9 to 130 KB each, threads
// included), as it runs at ingest.
func BenchmarkGroupOf(b *testing.B) {
	names, _ := filepath.Glob(filepath.Join(fixturesDir(b), "fragment_*.json"))
	var events []Event
	size := 0
	for _, n := range names {
		kind := "exception"
		if strings.Contains(n, "anr-body") {
			kind = "anr"
		}
		p := compactFixture(b, filepath.Base(n))
		size += len(p)
		events = append(events, Event{Type: kind, Payload: p})
	}
	b.SetBytes(int64(size / len(events)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := GroupOf(&events[i%len(events)]); !ok {
			b.Fatal("not ok")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// FuzzGroupOf: any payload, valid or not, groups without panicking, and a group always has a
// 32-character lowercase hex id.
func FuzzGroupOf(f *testing.F) {
	for _, n := range []string{"fragment_exception-body_js_backend-testdata.json", "fragment_exception-body_dart-nested_backend-testdata.json"} {
		f.Add(compactFixture(f, n), false)
	}
	f.Add([]byte(`{"framework":"apple","exceptions":[{"signal":"S","frames":[{"in_app":true,"method_name":"m\"\\"}]}],"threads":[{"a":"\\\"}"}]}`), false)
	f.Add([]byte(`{"exceptions":[{"type":"A","frames":[{}]}],"threads":[[[{"x":"]"}]]]}`), true)
	f.Fuzz(func(t *testing.T, payload []byte, anr bool) {
		kind := "exception"
		if anr {
			kind = "anr"
		}
		g, ok := GroupOf(&Event{Type: kind, Payload: payload})
		if ok && (len(g.ID) != 32 || strings.ToLower(g.ID) != g.ID) {
			t.Fatalf("id %q", g.ID)
		}
	})
}
