package localblob

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/eventstest"
)

var benchSizes = []int{64 << 10, 1 << 20, 8 << 20}

// BenchmarkPut: Store.Put of one blob, fsync and rename included (MB/s is the figure).
func BenchmarkPut(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			s, err := New(b.TempDir(), "https://example.com", testSecret)
			if err != nil {
				b.Fatal(err)
			}
			data := make([]byte, size)
			rand.Read(data)
			ctx := context.Background()
			r := bytes.NewReader(data)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				r.Reset(data)
				if err := s.Put(ctx, fmt.Sprintf("bench/%d", i%64), r, int64(size)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUpload: a PUT to a signed upload URL over real loopback HTTP, as an SDK sends it:
// verify, stream to disk, fsync, rename, answer.
func BenchmarkUpload(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			s, srv := serve(b, b.TempDir())
			client := srv.Client()
			data := make([]byte, size)
			rand.Read(data)
			ctx := context.Background()
			// Each upload URL has its own token.
			ups, tokens := make([]string, 64), make([]string, 64)
			for i := range ups {
				up, err := s.SignUpload(ctx, fmt.Sprintf("bench/%d", i), time.Hour)
				if err != nil {
					b.Fatal(err)
				}
				ups[i], tokens[i] = up.URL, up.Headers[TokenHeader]
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				req, err := http.NewRequestWithContext(ctx, http.MethodPut, ups[i%len(ups)], bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set(TokenHeader, tokens[i%len(ups)])
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("upload: %d", resp.StatusCode)
				}
			}
		})
	}
}

// BenchmarkInlineBlobs: one flush's inline attachments (32 blobs of 12 KiB, the recorded SDK
// traffic's mean; "large", 8 of 124 KiB, its screenshots) written durably as the flusher does:
// eight Puts at a time (each with its two fsyncs), or one PutBatch (one syncfs), which keeps
// them as Badger values with WithSmallBlobs. cpu-µs/blob is this process's user+system CPU.
func BenchmarkInlineBlobs(b *testing.B) {
	for _, sz := range []struct {
		name    string
		n, size int
	}{{"", 32, 12 << 10}, {"large/", 8, 124 << 10}} {
		benchInlineBlobs(b, sz.name, sz.n, sz.size)
	}
}

func benchInlineBlobs(b *testing.B, prefix string, n, size int) {
	blobs := make([]sinks.Blob, n)
	for i := range blobs {
		blobs[i] = sinks.Blob{Key: fmt.Sprintf("inline/%d", i), Bytes: make([]byte, size)}
		rand.Read(blobs[i].Bytes)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		small bool // WithSmallBlobs, a Badger database on disk
		write func(s *Store) error
	}{
		{"Put8", false, func(s *Store) error {
			var g errgroup.Group
			g.SetLimit(8)
			for i := range blobs {
				g.Go(func() error { return s.Put(ctx, blobs[i].Key, bytes.NewReader(blobs[i].Bytes), int64(size)) })
			}
			return g.Wait()
		}},
		{"PutBatch", false, func(s *Store) error { return s.PutBatch(ctx, blobs) }},
		{"PutBatchSmall", true, func(s *Store) error { return s.PutBatch(ctx, blobs) }},
	} {
		b.Run(prefix+tc.name, func(b *testing.B) {
			var opts []Option
			if tc.small {
				db, err := badgerdb.Open(b.TempDir(), nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = db.Close() })
				opts = append(opts, WithSmallBlobs(db, smallMax))
			}
			s, err := New(b.TempDir(), "https://example.com", testSecret, opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(n * size))
			cpu0 := eventstest.CPUTime(b)
			for b.Loop() {
				if err := tc.write(s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((eventstest.CPUTime(b)-cpu0).Microseconds())/float64(b.N*n), "cpu-µs/blob")
		})
	}
}

// smallMax admits the large case's blobs as values too. The node keeps its limit at 64 KiB:
// 124 KiB blobs cost the same CPU either way (docs/benchmarks.md).
const smallMax = 256 << 10
