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
