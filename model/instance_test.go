package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// issueFixtureEvents returns the exception and anr events of one fixture file: a batch is
// decoded as ingest decodes it, a single event or a partial event gives its kind member, and a
// fragment is the payload itself (exception, or anr for the anr body).
func issueFixtureEvents(tb testing.TB, name string) []Event {
	tb.Helper()
	switch {
	case strings.HasPrefix(name, "batch_"):
		b, err := DecodeBatch(readFixture(tb, name), testApp, false)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		var out []Event
		for _, e := range b.Events {
			if e.Type == "exception" || e.Type == "anr" {
				out = append(out, e)
			}
		}
		return out
	case strings.HasPrefix(name, "event_"), strings.HasPrefix(name, "partial-event_"):
		var m map[string]json.RawMessage
		if err := json.Unmarshal(readFixture(tb, name), &m); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		typ := "exception"
		if raw, ok := m["type"]; ok {
			if err := json.Unmarshal(raw, &typ); err != nil {
				tb.Fatalf("%s: type: %v", name, err)
			}
		}
		var c bytes.Buffer
		if err := json.Compact(&c, m[typ]); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		return []Event{{Type: typ, Payload: c.Bytes()}}
	case strings.HasPrefix(name, "fragment_"):
		typ := "exception"
		if strings.HasPrefix(name, "fragment_anr-") {
			typ = "anr"
		}
		return []Event{{Type: typ, Payload: compactFixture(tb, name)}}
	}
	tb.Fatalf("%s: not an issue fixture", name)
	return nil
}

// lines joins stack trace lines the way IssueDetail does.
func lines(l ...string) string { return strings.Join(l, "\n") }

// TestIssueDetailFixtures checks the full rendering of real events of every framework against
// text written out by hand from the fixture files.
func TestIssueDetailFixtures(t *testing.T) {
	type threadWant struct {
		i      int // index in Threads
		name   string
		frames []string
	}
	cases := []struct {
		file     string
		event    int // index among the file's issue events
		title    string
		message  string
		stack    string
		nThreads int
		threads  []threadWant
	}{
		// jvm: three chained units, outermost first, innermost (the group's) last; a native
		// frame and a frame without a file.
		{file: "event_android_exception-jvm_sdk0.18.0-SNAPSHOT_symbolicator-input.json",
			title:   "java.lang.IllegalAccessException@r8-map-id-5f120b04dbc4ea90be570727908ee9e0a49f3a51f6e65c823c02dd407d06b1a9",
			message: "This is a new exception",
			stack: lines(
				"java.lang.RuntimeException: java.lang.reflect.InvocationTargetException",
				"\tat com.android.internal.os.RuntimeInit$MethodAndArgsCaller.run(RuntimeInit.java:603)",
				"\tat com.android.internal.os.ZygoteInit.main(ZygoteInit.java:932)",
				"Caused by: java.lang.reflect.InvocationTargetException",
				"\tat java.lang.reflect.Method.invoke(Native Method)",
				"\tat com.android.internal.os.RuntimeInit$MethodAndArgsCaller.run(RuntimeInit.java:593)",
				"\tat com.android.internal.os.ZygoteInit.main(ZygoteInit.java:932)",
				"Caused by: java.lang.IllegalAccessException: This is a new exception",
				"\tat w9.l.onClick(r8-map-id-5f120b04dbc4ea90be570727908ee9e0a49f3a51f6e65c823c02dd407d06b1a9:99)",
				"\tat android.view.View.performClick(View.java:8083)",
				"\tat android.view.View.performClickInternal(View.java:8060)",
				"\tat android.view.View.-$$Nest$mperformClickInternal(Unknown Source:0)",
				"\tat android.view.View$PerformClick.run(View.java:31549)",
				"\tat android.os.Handler.handleCallback(Handler.java:995)",
				"\tat android.os.Handler.dispatchMessage(Handler.java:103)",
				"\tat android.os.Looper.loopOnce(Looper.java:248)",
				"\tat android.os.Looper.loop(Looper.java:338)",
				"\tat android.app.ActivityThread.main(ActivityThread.java:9067)",
				"\tat java.lang.reflect.Method.invoke(Native Method)",
				"\tat com.android.internal.os.RuntimeInit$MethodAndArgsCaller.run(RuntimeInit.java:593)",
				"\tat com.android.internal.os.ZygoteInit.main(ZygoteInit.java:932)"),
			nThreads: 6,
			threads: []threadWant{
				{0, "FinalizerDaemon", []string{
					"at java.lang.Object.wait(Native Method)",
					"at java.lang.Object.wait(Object.java:405)",
					"at java.lang.ref.ReferenceQueue.remove(ReferenceQueue.java:207)",
					"at java.lang.ref.ReferenceQueue.remove(ReferenceQueue.java:228)",
					"at java.lang.Daemons$FinalizerDaemon.runInternal(Daemons.java:348)",
					"at java.lang.Daemons$Daemon.run(Daemons.java:132)",
					"at java.lang.Thread.run(Thread.java:1119)"}},
				{1, "msr-io", []string{
					"at jdk.internal.misc.Unsafe.park(Native Method)",
					"at java.util.concurrent.locks.LockSupport.parkNanos(LockSupport.java:269)",
					"at java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.awaitNanos(AbstractQueuedSynchronizer.java:1758)",
					"at java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue.take(ScheduledThreadPoolExecutor.java:1236)",
					"at java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue.take(ScheduledThreadPoolExecutor.java:953)",
					"at java.util.concurrent.ThreadPoolExecutor.getTask(ThreadPoolExecutor.java:1082)",
					"at java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1142)",
					"at java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:651)",
					"at java.lang.Thread.run(Thread.java:1119)"}},
			}},
		// anr: jvm frames, line 0 with and without a file as Android prints them.
		{file: "fragment_anr-body_jvm_backend-testdata.json",
			title:   "sh.measure.android.anr.AnrError@ExceptionDemoActivity.kt",
			message: "Application Not Responding for at least 5000 ms.",
			stack: lines(
				"sh.measure.android.anr.AnrError: Application Not Responding for at least 5000 ms.",
				"\tat sh.measure.sample.ExceptionDemoActivity.deadLock$lambda$10(ExceptionDemoActivity.kt:66)",
				"\tat sh.measure.sample.ExceptionDemoActivity.$r8$lambda$G4MY09CRhRk9ettfD7HPDD_b1n4(Unknown Source:0)",
				"\tat sh.measure.sample.ExceptionDemoActivity$$ExternalSyntheticLambda0.run(R8$$SyntheticClass:0)",
				"\tat android.os.Handler.handleCallback(Handler.java:942)",
				"\tat android.os.Handler.dispatchMessage(Handler.java:99)",
				"\tat android.os.Looper.loopOnce(Looper.java:201)",
				"\tat android.os.Looper.loop(Looper.java:288)",
				"\tat android.app.ActivityThread.main(ActivityThread.java:7872)",
				"\tat java.lang.reflect.Method.invoke(Native Method)",
				"\tat com.android.internal.os.RuntimeInit$MethodAndArgsCaller.run(RuntimeInit.java:548)",
				"\tat com.android.internal.os.ZygoteInit.main(ZygoteInit.java:936)"),
			nThreads: 11,
			threads: []threadWant{{0, "OkHttp TaskRunner", []string{
				"at jdk.internal.misc.Unsafe.park(Native Method)",
				"at java.util.concurrent.locks.LockSupport.parkNanos(LockSupport.java:234)",
				"at java.util.concurrent.SynchronousQueue$TransferStack.awaitFulfill(SynchronousQueue.java:463)",
				"at java.util.concurrent.SynchronousQueue$TransferStack.transfer(SynchronousQueue.java:361)",
				"at java.util.concurrent.SynchronousQueue.poll(SynchronousQueue.java:939)",
				"at java.util.concurrent.ThreadPoolExecutor.getTask(ThreadPoolExecutor.java:1062)",
				"at java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1123)",
				"at java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:637)",
				"at java.lang.Thread.run(Thread.java:1012)"}}}},
		// apple, unsymbolicated: the signal alone heads the trace; addresses get their 0x.
		{file: "fragment_exception-body_ios-abort_ios-sdk-test.json",
			title: "SIGABRT",
			stack: lines(
				"SIGABRT",
				"\t0  libsystem_kernel.dylib  0x0000000108a4914a  0x108a41000 + 33098",
				"\t1  libsystem_pthread.dylib  0x0000000108aaaebd  0x108aa5000 + 24253",
				"\t2  libsystem_c.dylib  0x00007ff80016dd1c  0x7ff8000f1000 + 511260",
				"\t3  MeasureDemo  0x00000001084c6cf4  0x1084c4000 + 11508",
				"\t4  MeasureDemo  0x00000001084c6a03  0x1084c4000 + 10755",
				"\t5  MeasureDemo  0x00000001084c6aa1  0x1084c4000 + 10913",
				"\t6  UIKitCore  0x00007ff805faed4d  0x7ff804cbc000 + 19869005",
				"\t7  UIKitCore  0x00007ff805faf13d  0x7ff804cbc000 + 19870013",
				"\t8  UIKitCore  0x00007ff805faf24f  0x7ff804cbc000 + 19870287",
				"\t9  UIKitCore  0x00007ff806346231  0x7ff804cbc000 + 23634481",
				"\t10  UIKitCore  0x00007ff806346717  0x7ff804cbc000 + 23635735",
				"\t11  libdispatch.dylib  0x00007ff8001783ec  0x7ff800176000 + 9196",
				"\t12  libdispatch.dylib  0x00007ff8001796d8  0x7ff800176000 + 14040",
				"\t13  libdispatch.dylib  0x00007ff80018848c  0x7ff800176000 + 74892",
				"\t14  libdispatch.dylib  0x00007ff800187ef2  0x7ff800176000 + 73458",
				"\t15  CoreFoundation  0x00007ff800429b34  0x7ff80039c000 + 580404",
				"\t16  CoreFoundation  0x00007ff80042446f  0x7ff80039c000 + 558191",
				"\t17  CoreFoundation  0x00007ff8004236ed  0x7ff80039c000 + 554733",
				"\t18  GraphicsServices  0x00007ff8103ba08f  0x7ff8103b7000 + 12431",
				"\t19  UIKitCore  0x00007ff805cdf6ee  0x7ff804cbc000 + 16922350",
				"\t20  UIKitCore  0x00007ff805ce416e  0x7ff804cbc000 + 16941422",
				"\t21  UIKitCore  0x00007ff804d5fb73  0x7ff804cbc000 + 670579",
				"\t22  MeasureDemo  0x00000001084c9e0b  0x1084c4000 + 24075",
				"\t23  MeasureDemo  0x00000001084c9d87  0x1084c4000 + 23943",
				"\t24  MeasureDemo  0x00000001084c9e78  0x1084c4000 + 24184",
				"\t25  ???  0x00000001089023e0  0x0 + 0",
				"\t26  ???  0x000000010c3fd366  0x0 + 0"),
			nThreads: 3,
			threads: []threadWant{{0, "Thread 1", []string{
				"0  libsystem_kernel.dylib  0x0000000108a43af6  0x108a41000 + 10998",
				"1  libsystem_pthread.dylib  0x0000000108aa7bdd  0x108aa5000 + 11229",
				"2  libsystem_pthread.dylib  0x0000000108aa6acf  0x108aa5000 + 6863"}}}},
		// apple ("ios") with only instruction addresses: Flutter obfuscated on iOS.
		{file: "fragment_exception-body_ios-flutter-obfuscated_ios-sdk-test.json",
			stack: lines("<unknown>", "\t0  0x7af71c4903", "\t1  0x7af71c48cf")},
		// apple ("ios") with Dart frames: method and source location, no binary.
		{file: "fragment_exception-body_ios-flutter-unobfuscated_ios-sdk-test.json",
			title: "@main.dart",
			stack: lines("<unknown>",
				"\t0  _throwException (main.dart:84)",
				"\t1  handleTap (ink_well.dart:1176)",
				"\t2  _invoke1 (hooks.dart:330)")},
		// dart: the module joined to the file; a second unit with neither type nor message.
		{file: "fragment_exception-body_dart-nested_backend-testdata.json",
			title:   "MissingPluginException@platform_channel.dart",
			message: "(No implementation found for method non_existent_method on channel non_existent_channel)",
			stack: lines(
				"MissingPluginException: (No implementation found for method non_existent_method on channel non_existent_channel)",
				"\tat MethodChannel._invokeMethod (package:flutter/src/services/platform_channel.dart:368:7)",
				"<unknown>",
				"\tat MainScreen._noMethodChannel (package:measure_flutter_example/main.dart:151:5)")},
		// dart, obfuscated (Android): instruction addresses only, a null type.
		{file: "batch_android_flutter-android_sdk0.11.0-SNAPSHOT_exception_c60692d2.json",
			title:   "ZK",
			message: "MissingPluginException(No implementation found for method non_existent_method on channel non_existent_channel)",
			stack: lines(
				"ZK: MissingPluginException(No implementation found for method non_existent_method on channel non_existent_channel)",
				"\tat 0x7baa986ac7",
				"<unknown>",
				"\tat 0x7baa98b92b")},
		// js: V8 style, an anonymous frame without the parentheses.
		{file: "fragment_exception-body_js_backend-testdata.json",
			title:   "TypeError@App.js",
			message: "Cannot read property 'foo' of undefined",
			stack: lines(
				"TypeError: Cannot read property 'foo' of undefined",
				"\tat render (App.js:42:10)",
				"\tat ComponentA (ComponentA.js:10:5)",
				"\tat callCallback (ReactFiberWorkLoop.js:1:14)",
				"\tat ReactFiberWorkLoop.js:200:8")},
		{file: "fragment_exception-body_ios-rn-js-fatal_ios-sdk-test.json",
			title:   "Error@app:///index.android.bundle",
			message: "Simulated JavaScript exception",
			stack:   lines("Error: Simulated JavaScript exception", "\tat app:///index.android.bundle:1:12345")},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			evs := issueFixtureEvents(t, c.file)
			if c.event >= len(evs) {
				t.Fatalf("only %d issue events", len(evs))
			}
			ex, threads, err := IssueDetail(&evs[c.event])
			if err != nil {
				t.Fatal(err)
			}
			if ex.Title != c.title || ex.Message != c.message {
				t.Errorf("title, message = %q, %q; want %q, %q", ex.Title, ex.Message, c.title, c.message)
			}
			if ex.Stacktrace != c.stack {
				t.Errorf("stacktrace:\n%s\nwant:\n%s", ex.Stacktrace, c.stack)
			}
			if threads == nil || len(threads) != c.nThreads {
				t.Fatalf("threads = %d (nil %v), want %d", len(threads), threads == nil, c.nThreads)
			}
			for _, w := range c.threads {
				got := threads[w.i]
				if got.Name != w.name || !reflect.DeepEqual(got.Frames, w.frames) {
					t.Errorf("thread %d = %q %q\nwant %q %q", w.i, got.Name, got.Frames, w.name, w.frames)
				}
			}
		})
	}
}

// TestIssueDetailSymbolicatedApple: an Apple frame with a method reads like a symbolicated line
// of an iOS crash report, and the exception type shows with its signal.
func TestIssueDetailSymbolicatedApple(t *testing.T) {
	evs := issueFixtureEvents(t, "fragment_exception-body_apple-1_backend-testdata.json")
	ex, _, err := IssueDetail(&evs[0])
	if err != nil {
		t.Fatal(err)
	}
	l := strings.Split(ex.Stacktrace, "\n")
	want := map[int]string{
		0: "NSRangeException (SIGABRT): *** -[__NSArray0 objectAtIndex:]: index 1 beyond bounds for empty array",
		1: "\t0  libsystem_kernel.dylib  0x00000001044fd108  0x1044f4000 + 37128",
		3: "\t2  Wikipedia  0x0000000103123478  uncaught_exception_handler + 10171512 (PLCrashReporter.m:361)",
	}
	for i, w := range want {
		if i >= len(l) || l[i] != w {
			t.Errorf("line %d = %q, want %q", i, l[min(i, len(l)-1)], w)
		}
	}
	if ex.Title != "SIGABRT@PLCrashReporter.m" {
		t.Errorf("title = %q", ex.Title)
	}
}

// TestIssueDetailAppleErrorFixture: a real NSError sent with the crash ends the trace, its
// UserInfo readable: keys sorted, Apple's "\/" escapes gone.
func TestIssueDetailAppleErrorFixture(t *testing.T) {
	evs := issueFixtureEvents(t, "batch_ios_demoapp-ios_sdk0.3.1_exception_ace92cb4.json")
	ex, _, err := IssueDetail(&evs[0])
	if err != nil {
		t.Fatal(err)
	}
	l := strings.Split(ex.Stacktrace, "\n")
	first, last := l[0], l[len(l)-1]
	if first != "SIGTRAP" {
		t.Errorf("first line %q", first)
	}
	if want := `Error Domain=NSCocoaErrorDomain Code=260 UserInfo={"NSFilePath":"/path/that/does/not/exist.txt","NSURL":null,"NSUnderlyingError":null}`; last != want {
		t.Errorf("last line %q\nwant      %q", last, want)
	}
}

// issueFixtureFiles lists every fixture file that holds an exception or anr.
func issueFixtureFiles(tb testing.TB) []string {
	tb.Helper()
	var out []string
	for _, pat := range []string{"batch_*.json", "event_*.json", "partial-event_*.json", "fragment_*.json"} {
		names, err := filepath.Glob(filepath.Join(fixturesDir(tb), pat))
		if err != nil {
			tb.Fatal(err)
		}
		for _, n := range names {
			b := readFixture(tb, filepath.Base(n))
			if bytes.Contains(b, []byte(`"exceptions"`)) {
				out = append(out, filepath.Base(n))
			}
		}
	}
	sort.Strings(out)
	return out
}

// refFrame and refUnit are read with plain encoding/json as the independent reference of
// TestIssueDetailAllFixtures.
type refFrame map[string]any

type refUnit struct {
	Type    string     `json:"type"`
	Message string     `json:"message"`
	Frames  []refFrame `json:"frames"`
}

type refPayload struct {
	Error      map[string]any `json:"error"`
	Exceptions []refUnit      `json:"exceptions"`
	Threads    []struct {
		Name   string     `json:"name"`
		Frames []refFrame `json:"frames"`
	} `json:"threads"`
}

// TestIssueDetailAllFixtures renders every exception and anr of the corpus and checks what can
// be checked without writing each out: title and message agree with GroupOf, the trace has one
// header per unit and one line per frame, each frame line names the frame's method, file and
// binary, and threads mirror the payload.
func TestIssueDetailAllFixtures(t *testing.T) {
	n := 0
	fws := map[string]bool{}
	for _, file := range issueFixtureFiles(t) {
		for i, e := range issueFixtureEvents(t, file) {
			n++
			g, ok := GroupOf(&e)
			if !ok {
				t.Fatalf("%s #%d: GroupOf not ok", file, i)
			}
			fws[e.Type+"/"+g.Framework] = true
			ex, threads, err := IssueDetail(&e)
			if err != nil {
				t.Fatalf("%s #%d: %v", file, i, err)
			}
			if ex.Title != g.Title() || ex.Message != g.Message {
				t.Errorf("%s #%d: title %q message %q, GroupOf says %q %q", file, i, ex.Title, ex.Message, g.Title(), g.Message)
			}
			var ref refPayload
			if err := json.Unmarshal(e.Payload, &ref); err != nil {
				t.Fatalf("%s #%d: %v", file, i, err)
			}
			l := strings.Split(ex.Stacktrace, "\n")
			k := 0
			for _, u := range ref.Exceptions {
				// A message may span lines, as in Java's printStackTrace.
				header := 1 + strings.Count(u.Type+u.Message, "\n")
				if k+header > len(l) || l[k] == "" || strings.HasPrefix(l[k], "\t") {
					t.Fatalf("%s #%d: line %d is no header: %q", file, i, k, l[min(k, len(l)-1)])
				}
				k += header
				for _, f := range u.Frames {
					if k >= len(l) || !strings.HasPrefix(l[k], "\t") || len(l[k]) < 2 {
						t.Fatalf("%s #%d: line %d is no frame: %q", file, i, k, l[min(k, len(l)-1)])
					}
					checkFrameLine(t, file, l[k], f)
					k++
				}
			}
			if len(ref.Error) > 0 {
				if k >= len(l) || !strings.HasPrefix(l[k], "Error ") {
					t.Fatalf("%s #%d: no error line after the units: %q", file, i, l[min(k, len(l)-1)])
				}
				k++
			}
			if k != len(l) {
				t.Errorf("%s #%d: %d lines, want %d", file, i, len(l), k)
			}
			if threads == nil || len(threads) != len(ref.Threads) {
				t.Fatalf("%s #%d: %d threads, want %d", file, i, len(threads), len(ref.Threads))
			}
			for j, th := range ref.Threads {
				if threads[j].Name != th.Name || threads[j].Frames == nil || len(threads[j].Frames) != len(th.Frames) {
					t.Fatalf("%s #%d: thread %d = %q with %d frames, want %q with %d", file, i, j,
						threads[j].Name, len(threads[j].Frames), th.Name, len(th.Frames))
				}
				for m, f := range th.Frames {
					checkFrameLine(t, file, threads[j].Frames[m], f)
				}
			}
		}
	}
	for _, want := range []string{"exception/jvm", "exception/apple", "exception/dart", "exception/js", "anr/jvm"} {
		if !fws[want] {
			t.Errorf("no fixture event of %s", want)
		}
	}
	t.Logf("%d issue events rendered", n)
}

// checkFrameLine: a frame's line shows its method, file and binary names when it has them.
func checkFrameLine(t *testing.T, file, line string, f refFrame) {
	t.Helper()
	if strings.TrimSpace(line) == "" || strings.Contains(line, "\n") {
		t.Errorf("%s: frame line %q", file, line)
	}
	for _, k := range []string{"method_name", "file_name", "binary_name"} {
		if k == "file_name" && f["line_num"] == -2.0 && strings.HasSuffix(line, "(Native Method)") {
			continue // Java shows no file for a native method
		}
		if v, _ := f[k].(string); v != "" && !strings.Contains(line, v) {
			t.Errorf("%s: frame line %q does not show %s %q", file, line, k, v)
		}
	}
}

// TestIssueDetailPayloads covers minimal, partial and malformed payloads.
func TestIssueDetailPayloads(t *testing.T) {
	cases := []struct {
		name, typ, payload string
		title, msg, stack  string
		threads            []ThreadDetail
	}{
		{name: "empty object", typ: "exception", payload: `{}`, threads: []ThreadDetail{}},
		{name: "nulls everywhere", typ: "exception",
			payload: `{"exceptions":null,"threads":null,"error":null,"framework":null}`, threads: []ThreadDetail{}},
		{name: "null members of units and frames", typ: "exception",
			payload: `{"exceptions":[{"type":null,"message":null,"frames":[{"class_name":null,"method_name":null,"line_num":null}]}],"threads":[{"name":null,"frames":null}]}`,
			stack:   lines("<unknown>", "\t<unknown>"), threads: []ThreadDetail{{Name: "", Frames: []string{}}}},
		{name: "wrong kinds are ignored", typ: "exception",
			payload: `{"exceptions":[null,1,"x",{"type":5,"message":["m"],"frames":{"a":1}},{"type":"E","frames":[2,{"method_name":7,"class_name":"C","line_num":"9"}]}],"threads":{"a":1}}`,
			title:   "E", stack: lines("<unknown>", "Caused by: E", "\tat C(Unknown Source)"), threads: []ThreadDetail{}},
		{name: "jvm frame variants", typ: "exception",
			payload: `{"handled":false,"exceptions":[{"type":"E","message":"boom","frames":[` +
				`{"method_name":"m"},{"class_name":"C"},{},{"file_name":"F.kt","line_num":-1},{"class_name":"C","method_name":"m","file_name":"F.kt","line_num":12.7},` +
				`{"class_name":"C","method_name":"n","line_num":-2},{"class_name":"C","method_name":"o","line_num":7}]}]}`,
			title: "E", msg: "boom",
			stack: lines("E: boom", "\tat m(Unknown Source)", "\tat C(Unknown Source)", "\t<unknown>", "\tat <unknown>(F.kt)",
				"\tat C.m(F.kt:12)", "\tat C.n(Native Method)", "\tat C.o(Unknown Source:7)"),
			threads: []ThreadDetail{}},
		{name: "jvm message only, then a cause", typ: "exception",
			payload: `{"exceptions":[{"message":"outer"},{"type":"Inner","frames":[{"class_name":"a.B","method_name":"c","file_name":"B.kt","line_num":3}]}]}`,
			title:   "Inner@B.kt", stack: lines("outer", "Caused by: Inner", "\tat a.B.c(B.kt:3)"), threads: []ThreadDetail{}},
		{name: "anr is jvm whatever the framework says", typ: "anr",
			payload: `{"handled":false,"foreground":true,"framework":"js","exceptions":[{"type":"A"},{"type":"B","message":"m","frames":[{"method_name":"x","file_name":"y.js","line_num":1,"col_num":2}]}],"threads":[{"name":"main","frames":[{"class_name":"K","method_name":"run"}]}]}`,
			title:   "B@y.js", msg: "m", stack: lines("A", "Caused by: B: m", "\tat x(y.js:1)"),
			threads: []ThreadDetail{{Name: "main", Frames: []string{"at K.run(Unknown Source)"}}}},
		{name: "apple frame variants", typ: "exception",
			payload: `{"framework":"apple","exceptions":[{"type":"NSInvalidArgumentException","signal":"SIGABRT","message":"bad","frames":[` +
				`{"frame_index":0,"binary_name":"MyApp","instruction_address":"0x0000000102a4c","symbol_address":"0000000102a00","method_name":"-[ViewController crash]","offset":52},` +
				`{"frame_index":1,"binary_name":"MyApp","symbol_address":"0x10","method_name":"main","offset":0,"file_name":"main.m","line_num":14},` +
				`{"frame_index":2},{"binary_name":"dyld"},{"frame_index":3,"binary_address":"1000","offset":16},{"file_name":"x.swift"}]}]}`,
			title: "SIGABRT", msg: "bad",
			stack: lines("NSInvalidArgumentException (SIGABRT): bad",
				"\t0  MyApp  0x0000000102a4c  -[ViewController crash] + 52",
				"\t1  MyApp  0x10  main + 0 (main.m:14)",
				"\t<unknown>", "\tdyld", "\t3  0x1000 + 16", "\t(x.swift)"),
			threads: []ThreadDetail{}},
		{name: "apple error without exceptions", typ: "exception",
			payload: `{"handled":true,"exceptions":[],"error":{"code":"NSURLErrorDomain","numcode":-1009,"meta":{"k": "v", "b": [1.50, "<\/x>"]}}}`,
			title:   "NSURLErrorDomain", stack: `Error Domain=NSURLErrorDomain Code=-1009 UserInfo={"b":[1.50,"</x>"],"k":"v"}`, threads: []ThreadDetail{}},
		{name: "apple error after a unit, empty meta", typ: "exception",
			payload: `{"framework":"apple","exceptions":[{"signal":"SIGSEGV"}],"error":{"numcode":1,"meta":{}}}`,
			title:   "SIGSEGV", stack: lines("SIGSEGV", "Error Code=1"), threads: []ThreadDetail{}},
		{name: "empty error object adds nothing", typ: "exception",
			payload: `{"framework":"apple","exceptions":[{"signal":"SIGSEGV"}],"error":{}}`,
			title:   "SIGSEGV", stack: "SIGSEGV", threads: []ThreadDetail{}},
		{name: "dart frame variants", typ: "exception",
			payload: `{"framework":"dart","exceptions":[{"type":"StateError","frames":[` +
				`{"method_name":"f","file_name":"a.dart","line_num":3},{"method_name":"g"},{"file_name":"b.dart","col_num":4},{"module_name":"dart:core/","file_name":"c.dart","line_num":1,"col_num":2},{"instruction_address":"7f00"},{"frame_index":9}]}]}`,
			title:   "StateError@a.dart",
			stack:   lines("StateError", "\tat f (a.dart:3)", "\tat g", "\tat b.dart", "\tat dart:core/c.dart:1:2", "\tat 0x7f00", "\t<unknown>"),
			threads: []ThreadDetail{}},
		{name: "js frame variants", typ: "exception",
			payload: `{"framework":"js","severity":"fatal","exceptions":[{"type":"Error","message":"","frames":[{"method_name":"f","file_name":"a.js"},{"method_name":"g","line_num":1}]}],"threads":[]}`,
			title:   "Error@a.js", stack: lines("Error", "\tat f (a.js)", "\tat g"), threads: []ThreadDetail{}},
		{name: "escapes and unicode", typ: "exception",
			payload: `{"framework":"js","exceptions":[{"type":"Error","message":"line1\nline2 \u00fc \ud83d\ude15","frames":[{"method_name":"\u003canon\u003e","file_name":"a\"b.js","line_num":1,"col_num":1}]}]}`,
			title:   `Error@a"b.js`, msg: "line1\nline2 ü 😕", stack: "Error: line1\nline2 ü 😕\n\tat <anon> (a\"b.js:1:1)", threads: []ThreadDetail{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex, threads, err := IssueDetail(&Event{Type: c.typ, Payload: []byte(c.payload)})
			if err != nil {
				t.Fatal(err)
			}
			want := ExceptionDetail{Title: c.title, Stacktrace: c.stack, Message: c.msg}
			if ex != want {
				t.Errorf("got  %q\nwant %q", ex, want)
			}
			if threads == nil || !reflect.DeepEqual(threads, c.threads) {
				t.Errorf("threads = %#v, want %#v", threads, c.threads)
			}
			// Frames are never nil, so the dashboard always gets an array.
			b, _ := json.Marshal(threads)
			if bytes.Contains(b, []byte("null")) {
				t.Errorf("threads JSON %s", b)
			}
		})
	}
}

// TestIssueDetailErrors: other kinds and payloads that are not JSON objects are ErrNoIssue.
func TestIssueDetailErrors(t *testing.T) {
	for _, c := range []struct{ typ, payload string }{
		{"session_start", `{}`},
		{"string", `{"string":"x"}`},
		{"exception", ``},
		{"exception", `null`},
		{"exception", `[]`},
		{"anr", `"x"`},
		{"exception", `not json`},
		{"exception", `{"exceptions":[`},
		{"anr", `{"exceptions":[{"type":"A"}]`},
	} {
		var p []byte
		if c.payload != "" {
			p = []byte(c.payload)
		}
		ex, th, err := IssueDetail(&Event{Type: c.typ, Payload: p})
		if !errors.Is(err, ErrNoIssue) {
			t.Errorf("%s %q: err = %v, want ErrNoIssue", c.typ, c.payload, err)
		}
		if ex != (ExceptionDetail{}) || th != nil {
			t.Errorf("%s %q: returned %v %v with the error", c.typ, c.payload, ex, th)
		}
	}
}

// TestIssueDetailJSON: the types marshal to the member names of the dashboard API.
func TestIssueDetailJSON(t *testing.T) {
	b, err := json.Marshal(struct {
		E ExceptionDetail `json:"exception"`
		T []ThreadDetail  `json:"threads"`
	}{ExceptionDetail{"t", "s", "m"}, []ThreadDetail{{"main", []string{}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"exception":{"title":"t","stacktrace":"s","message":"m"},"threads":[{"name":"main","frames":[]}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestAttributesJSON(t *testing.T) {
	sst, err := ParseTimestamp("2024-05-01T12:34:56.123456789Z")
	if err != nil {
		t.Fatal(err)
	}
	full := Attributes{
		InstallationID: "inst", AppVersion: "1.2", AppBuild: "12", AppUniqueID: "sh.app", Platform: "android",
		SDKVersion: "0.9.0", ThreadName: "main", UserID: "u<1>", DeviceName: "sunfish", DeviceModel: "Pixel 4a",
		DeviceManufacturer: "Google", DeviceType: "phone", DeviceIsFoldable: true, DeviceIsPhysical: true,
		DeviceDensityDPI: 440, DeviceWidthPx: 1080, DeviceHeightPx: 2340, DeviceDensity: 2.75, DeviceLocale: "en-US",
		DeviceLowPowerMode: true, DeviceThermalThrottlingEnabled: true, OSName: "android", OSVersion: "33",
		OSPageSize: 4, NetworkType: "wifi", NetworkProvider: "unknown", NetworkGeneration: "unknown",
		DeviceCPUArch: "arm64-v8a", SessionStartTime: sst,
		Extra: []byte(`{"patch_version":"3","patch_id":"p\u00fc","z":{"b":[1,2],"a":null}}`),
	}
	cases := []struct {
		name string
		a    Attributes
		want string
	}{
		{"zero: the required members only", Attributes{},
			`{"app_build":"","app_unique_id":"","app_version":"","device_cpu_arch":"","installation_id":"","network_generation":"","network_provider":"","network_type":"","platform":"","service_sdk_version":""}`},
		{"every member, extra merged, keys sorted", full,
			`{"app_build":"12","app_unique_id":"sh.app","app_version":"1.2","device_cpu_arch":"arm64-v8a","device_density":2.75,` +
				`"device_density_dpi":440,"device_height_px":2340,"device_is_foldable":true,"device_is_physical":true,"device_locale":"en-US",` +
				`"device_low_power_mode":true,"device_manufacturer":"Google","device_model":"Pixel 4a","device_name":"sunfish",` +
				`"device_thermal_throttling_enabled":true,"device_type":"phone","device_width_px":1080,"installation_id":"inst",` +
				`"network_generation":"unknown","network_provider":"unknown","network_type":"wifi","os_name":"android","os_page_size":4,` +
				`"os_version":"33","patch_id":"p\u00fc","patch_version":"3","platform":"android","service_sdk_version":"0.9.0",` +
				`"session_start_time":"2024-05-01T12:34:56.123456789Z","thread_name":"main","user_id":"u\u003c1\u003e","z":{"b":[1,2],"a":null}}`},
		{"float32 density keeps its short form", Attributes{DeviceDensity: 1.1, Platform: "ios"},
			`{"app_build":"","app_unique_id":"","app_version":"","device_cpu_arch":"","device_density":1.1,"installation_id":"","network_generation":"","network_provider":"","network_type":"","platform":"ios","service_sdk_version":""}`},
		{"extra cannot stand in for a table member", Attributes{Extra: []byte(`{"os_name":"x","device_is_physical":true,"installation_id":"y","measure_sdk_version":"1","k":1}`)},
			`{"app_build":"","app_unique_id":"","app_version":"","device_cpu_arch":"","installation_id":"","k":1,"network_generation":"","network_provider":"","network_type":"","platform":"","service_sdk_version":""}`},
		{"broken extra is left out", Attributes{Extra: []byte(`{"k":`)},
			`{"app_build":"","app_unique_id":"","app_version":"","device_cpu_arch":"","installation_id":"","network_generation":"","network_provider":"","network_type":"","platform":"","service_sdk_version":""}`},
		{"extra that is no object is left out", Attributes{Extra: []byte(`[1]`)},
			`{"app_build":"","app_unique_id":"","app_version":"","device_cpu_arch":"","installation_id":"","network_generation":"","network_provider":"","network_type":"","platform":"","service_sdk_version":""}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := AttributesJSON(&c.a)
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if again := AttributesJSON(&c.a); !bytes.Equal(again, got) {
				t.Errorf("not deterministic: %s then %s", got, again)
			}
		})
	}
}

// TestAttributesJSONFixtures: the attributes of every real event render as a JSON object that
// names each decoded value and every Extra member as sent.
func TestAttributesJSONFixtures(t *testing.T) {
	required := []string{"installation_id", "app_version", "app_build", "app_unique_id", "platform",
		"service_sdk_version", "network_type", "network_provider", "network_generation", "device_cpu_arch"}
	n, extras := 0, 0
	for name, body := range fixtureBatches(t) {
		b, err := DecodeBatch(body, testApp, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range b.Events {
			a := &b.Events[i].Attribute
			n++
			var got map[string]json.RawMessage
			if err := json.Unmarshal(AttributesJSON(a), &got); err != nil {
				t.Fatalf("%s #%d: %v", name, i, err)
			}
			for _, k := range required {
				if _, ok := got[k]; !ok {
					t.Errorf("%s #%d: no %s", name, i, k)
				}
			}
			str := func(k string) string {
				var s string
				if raw, ok := got[k]; ok {
					if err := json.Unmarshal(raw, &s); err != nil {
						t.Errorf("%s #%d: %s: %v", name, i, k, err)
					}
				}
				return s
			}
			if str("installation_id") != a.InstallationID || str("service_sdk_version") != a.SDKVersion ||
				str("thread_name") != a.ThreadName || str("os_version") != a.OSVersion || str("device_model") != a.DeviceModel {
				t.Errorf("%s #%d: strings differ from the decoded attributes", name, i)
			}
			if _, ok := got["measure_sdk_version"]; ok {
				t.Errorf("%s #%d: measure_sdk_version is named service_sdk_version", name, i)
			}
			if raw, ok := got["device_density"]; ok != (a.DeviceDensity != 0) {
				t.Errorf("%s #%d: device_density %s for %v", name, i, raw, a.DeviceDensity)
			} else if ok {
				var f float32
				if err := json.Unmarshal(raw, &f); err != nil || f != a.DeviceDensity {
					t.Errorf("%s #%d: device_density %s, want %v", name, i, raw, a.DeviceDensity)
				}
			}
			if a.SessionStartTime != 0 {
				if ns, err := ParseTimestamp(str("session_start_time")); err != nil || ns != a.SessionStartTime {
					t.Errorf("%s #%d: session_start_time %q (%v), want %d", name, i, str("session_start_time"), err, a.SessionStartTime)
				}
			}
			if len(a.Extra) > 0 {
				extras++
				var extra map[string]json.RawMessage
				if err := json.Unmarshal(a.Extra, &extra); err != nil {
					t.Fatalf("%s #%d: Extra: %v", name, i, err)
				}
				for k, v := range extra {
					var c bytes.Buffer
					_ = json.Compact(&c, v)
					if !bytes.Equal(got[k], c.Bytes()) {
						t.Errorf("%s #%d: extra %s = %s, want %s", name, i, k, got[k], v)
					}
				}
			}
		}
	}
	if n == 0 || extras == 0 {
		t.Fatalf("%d events, %d with extra attributes: the corpus should have both", n, extras)
	}
	t.Logf("%d events, %d with extra attributes", n, extras)
}
