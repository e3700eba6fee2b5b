package spool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

func body(i int) []byte {
	return []byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, bytes.Repeat([]byte("x"), i%300)))
}

func TestAppendReopenReplay(t *testing.T) {
	dir := t.TempDir()
	s, recs, err := Open(dir, Options{SegmentBytes: 4 << 10})
	if err != nil || len(recs) != 0 {
		t.Fatalf("open: %v %d", err, len(recs))
	}
	app := uuid.New()
	const n = 200
	var wg sync.WaitGroup
	seqs := make([]uint64, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &Record{AppID: app, RequestID: uuid.New(), Kind: uint8(i % 2), Body: body(i)}
			if err := s.Append(r); err != nil {
				t.Error(err)
			}
			seqs[i] = r.Seq
		}()
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, q := range seqs {
		if q == 0 || seen[q] {
			t.Fatalf("sequence %d zero or repeated", q)
		}
		seen[q] = true
	}
	if s.Segments() < 2 {
		t.Errorf("expected rotation into several segments, got %d", s.Segments())
	}
	pending := s.PendingBytes()
	if pending <= 0 {
		t.Fatal("nothing pending")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(&Record{Body: []byte("x")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}

	s2, recs, err := Open(dir, Options{SegmentBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("replayed %d records, want %d", len(recs), n)
	}
	if s2.PendingBytes() != pending {
		t.Errorf("pending after reopen %d, want %d", s2.PendingBytes(), pending)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Seq <= recs[i-1].Seq {
			t.Fatal("replay not in sequence order")
		}
	}
	for _, r := range recs {
		if r.AppID != app {
			t.Fatal("app id lost")
		}
		var k int
		fmt.Sscanf(string(r.Body), `{"n":%d`, &k)
		if !bytes.Equal(r.Body, body(k)) || r.Kind != uint8(k%2) {
			t.Fatalf("record %d body or kind changed", r.Seq)
		}
	}
	// New appends continue the sequence.
	r := &Record{AppID: app, Body: []byte("after")}
	if err := s2.Append(r); err != nil {
		t.Fatal(err)
	}
	if r.Seq <= recs[len(recs)-1].Seq {
		t.Fatalf("sequence went back: %d", r.Seq)
	}
	// Acknowledging everything deletes all but the active segment.
	for _, r := range recs {
		s2.Ack(r.Seq, len(r.Body))
	}
	s2.Ack(r.Seq, len(r.Body))
	s2.Ack(r.Seq, len(r.Body)) // a second ack of the same record changes nothing
	if s2.PendingBytes() != 0 {
		t.Errorf("pending %d after acking all", s2.PendingBytes())
	}
	if s2.Segments() != 1 {
		t.Errorf("%d segments left, want only the active one", s2.Segments())
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	s3, recs, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	// A close with everything acknowledged leaves nothing to replay.
	if len(recs) != 0 {
		t.Fatalf("after full ack and close, replay %d records", len(recs))
	}
}

func TestTornTail(t *testing.T) {
	cases := []struct {
		name string
		cut  func(data []byte) []byte
	}{
		{"half a header", func(d []byte) []byte { return append(d, 7, 0, 0) }},
		{"length past end", func(d []byte) []byte { return append(d, 200, 0, 0, 0, 1, 2, 3, 4, 5) }},
		{"bad checksum", func(d []byte) []byte {
			rec := append([]byte{}, d...)
			d = append(d, rec...)
			d[len(d)-1] ^= 0xff
			return d
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Append(&Record{AppID: uuid.New(), Body: []byte("kept")}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			files, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
			if len(files) != 1 {
				t.Fatalf("%d segments", len(files))
			}
			data, _ := os.ReadFile(files[0])
			if err := os.WriteFile(files[0], c.cut(data), 0o640); err != nil {
				t.Fatal(err)
			}
			s2, recs, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if len(recs) != 1 || string(recs[0].Body) != "kept" {
				t.Fatalf("got %d records", len(recs))
			}
			if st, _ := os.Stat(files[0]); st.Size() != int64(len(data)) {
				t.Errorf("torn tail not cut: size %d, want %d", st.Size(), len(data))
			}
		})
	}
}

// BenchmarkAppend measures group commit with 8 concurrent writers of ~58 KB bodies, the shape
// docs/architecture.md ("Dependency traps") measured (a plain append file with group fdatasync ≈ 3.8k requests/s).
func BenchmarkAppend(b *testing.B) {
	s, _, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	payload := bytes.Repeat([]byte("e"), 58<<10)
	b.SetBytes(int64(len(payload)))
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := &Record{Body: payload}
			if err := s.Append(r); err != nil {
				b.Error(err)
				return
			}
			s.Ack(r.Seq, len(r.Body))
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// TestSequenceNeverRepeats: sequence numbers keep growing across clean shutdowns (everything
// acknowledged, segments deleted) and across crashes that leave only an empty segment.
func TestSequenceNeverRepeats(t *testing.T) {
	dir := t.TempDir()
	var last uint64
	appendOne := func(s *Spool) *Record {
		r := &Record{AppID: uuid.New(), Body: []byte("x")}
		if err := s.Append(r); err != nil {
			t.Fatal(err)
		}
		if r.Seq <= last {
			t.Fatalf("sequence %d after %d", r.Seq, last)
		}
		last = r.Seq
		return r
	}
	for round := 0; round < 3; round++ {
		s, recs, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			s.Ack(r.Seq, len(r.Body))
		}
		for i := 0; i < 3; i++ {
			r := appendOne(s)
			s.Ack(r.Seq, len(r.Body))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if segs, _ := filepath.Glob(filepath.Join(dir, "*.seg")); len(segs) != 0 {
			t.Fatalf("clean close left %d segments", len(segs))
		}
	}
	// A crash right after start leaves an empty active segment: its name still counts.
	s, _, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, seqFile)) // only the empty segment remembers the floor now
	crash(s)
	s2, _, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	appendOne(s2)
}

// TestRecycledSegments: acknowledged full segments become spares, new segments reuse them, and
// a reopen (what a crash leaves) replays exactly the records not acknowledged, none of the old
// records still in a reused file past its new ones.
func TestRecycledSegments(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 4 << 10}
	s, _, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	app := uuid.New()
	var recs []*Record
	appendN := func(n int) {
		for i := 0; i < n; i++ {
			// Records of one size: in a reused file, the old ones past the new ones start
			// where a next record would, whole and with good checksums.
			r := &Record{AppID: app, RequestID: uuid.New(), Body: []byte(fmt.Sprintf("%0300d", len(recs)))}
			if err := s.Append(r); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
	}
	ackAll := func() {
		for _, r := range recs {
			s.Ack(r.Seq, len(r.Body))
		}
	}
	glob := func(pattern string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		return m
	}
	appendN(60)
	ackAll()
	if n := len(glob("*.spare")); n != maxSpares {
		t.Fatalf("%d spares after acknowledging %d full segments, want %d", n, s.Segments(), maxSpares)
	}
	// Append until a rotation takes a spare, then two more: the active segment is a reused
	// file holding two new records and, past them, whole old ones.
	for spares := len(glob("*.spare")); len(glob("*.spare")) == spares; {
		appendN(1)
	}
	appendN(2)
	want := map[uint64]string{}
	for _, r := range recs[60:] {
		want[r.Seq] = string(r.Body)
	}
	for _, r := range recs[60:65] { // acknowledge some of the new ones
		s.Ack(r.Seq, len(r.Body))
		delete(want, r.Seq)
	}
	crash(s)
	_, got, err := Open(dir, opts) // reads what is on disk, as a start after a crash would
	if err != nil {
		t.Fatal(err)
	}
	gotSeq := map[uint64]string{}
	for _, r := range got {
		gotSeq[r.Seq] = string(r.Body)
	}
	for q, b := range want {
		if gotSeq[q] != b {
			t.Errorf("record %d not replayed as written", q)
		}
	}
	for q := range gotSeq {
		if _, ok := want[q]; !ok && q <= recs[59].Seq {
			t.Errorf("record %d of a recycled segment replayed", q)
		}
	}
}

// BenchmarkAppendUnderWrites is BenchmarkAppend with another writer on the same file system, as
// the event store is on a node: files grown by 1 MiB appends at about 40 MB/s, an fdatasync every
// 16 MiB, a new file every 64 MiB. p99-ms is the append latency the request path waits for.
func BenchmarkAppendUnderWrites(b *testing.B) {
	dir := b.TempDir()
	s, _, err := Open(filepath.Join(dir, "spool"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() { // ends when stop closes
		defer close(stopped)
		chunk := bytes.Repeat([]byte("w"), 1<<20)
		var f *os.File
		defer func() { f.Close() }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
			if i%64 == 0 {
				f.Close()
				name := filepath.Join(dir, fmt.Sprint("other-", i%128))
				if f, err = os.Create(name); err != nil {
					b.Error(err)
					return
				}
			}
			if _, err := f.Write(chunk); err != nil {
				b.Error(err)
				return
			}
			if i%16 == 15 {
				_ = f.Sync()
			}
		}
	}()
	payload := bytes.Repeat([]byte("e"), 58<<10)
	var mu sync.Mutex
	var lat []time.Duration
	b.SetBytes(int64(len(payload)))
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			r := &Record{Body: payload}
			t := time.Now()
			if err := s.Append(r); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t))
			s.Ack(r.Seq, len(r.Body))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	close(stop)
	<-stopped
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
	}
}

// crash stops s as a killed process would leave it: the writer and the files closed (the lock
// with them, as the kernel releases a dead process's), none of Close's clean-shutdown
// bookkeeping done.
func crash(s *Spool) {
	s.sendMu.Lock()
	s.closed = true
	close(s.reqs)
	s.sendMu.Unlock()
	<-s.stopped
	s.active.Close()
	s.lock.Close()
}

// TestOpenLocksTheDirectory: a second Open of a spool in use fails with ErrLocked, whether by
// this process or another; Close and a crash both let the next one in.
func TestOpenLocksTheDirectory(t *testing.T) {
	dir := t.TempDir()
	s, _, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(&Record{Body: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open in this process: %v, want ErrLocked", err)
	}
	// Another process: flock(1) asks for the same lock without waiting.
	if flock, err := exec.LookPath("flock"); err == nil {
		out, err := exec.Command(flock, "-n", filepath.Join(dir, lockFile), "true").CombinedOutput()
		if err == nil {
			t.Fatalf("another process took the spool's lock while it is open (%s)", out)
		}
	}
	crash(s)
	s2, recs, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("open after a crash: %v", err)
	}
	if len(recs) != 1 || string(recs[0].Body) != "one" {
		t.Fatalf("replayed %d records after a crash, want the one appended", len(recs))
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	s3, _, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("open after Close: %v", err)
	}
	s3.Close()
}

// TestContents: what a spool directory holds, read without opening it: the records a start
// would replay and the next sequence number, through a crash, a clean close and a recycled
// segment's old records.
func TestContents(t *testing.T) {
	check := func(dir string, records int, next uint64) {
		t.Helper()
		n, nx, err := Contents(dir)
		if err != nil || n != records || nx != next {
			t.Fatalf("Contents = %d records, next %d, %v; want %d, %d", n, nx, err, records, next)
		}
	}
	dir := t.TempDir()
	check(filepath.Join(dir, "missing"), 0, 1)
	opts := Options{SegmentBytes: 4 << 10}
	s, _, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	check(dir, 0, 1) // a new spool's empty active segment
	body := bytes.Repeat([]byte("x"), 1000)
	for range 3 {
		if err := s.Append(&Record{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	check(dir, 3, 4)
	crash(s)
	check(dir, 3, 4)
	s2, recs, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		s2.Ack(r.Seq, len(r.Body))
	}
	// Fill and acknowledge segments until one is recycled: its old records are not counted.
	for range 20 {
		r := &Record{Body: body}
		if err := s2.Append(r); err != nil {
			t.Fatal(err)
		}
		s2.Ack(r.Seq, len(r.Body))
	}
	crash(s2)
	check(dir, 0, 24)
	s3, _, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	s3.Close()
	check(dir, 0, 24) // a clean close keeps the next number in next.seq
	if err := os.Chmod(dir, 0); err == nil && os.Geteuid() != 0 {
		defer os.Chmod(dir, 0o750)
		if _, _, err := Contents(dir); err == nil {
			t.Fatal("an unreadable directory reads as empty")
		}
	}
}

// TestMinSeq: a spool opened with MinSeq numbers its records from there, and never below what
// its own directory already used.
func TestMinSeq(t *testing.T) {
	dir := t.TempDir()
	s, _, err := Open(dir, Options{MinSeq: 500})
	if err != nil {
		t.Fatal(err)
	}
	r := &Record{Body: []byte("x")}
	if err := s.Append(r); err != nil {
		t.Fatal(err)
	}
	if r.Seq != 500 {
		t.Fatalf("first record %d, want 500", r.Seq)
	}
	s.Ack(r.Seq, len(r.Body))
	s.Close()
	s, _, err = Open(dir, Options{MinSeq: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(r); err != nil {
		t.Fatal(err)
	}
	if r.Seq != 501 {
		t.Fatalf("after a reopen with a lower MinSeq: %d, want 501", r.Seq)
	}
}
