package ingest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A body buffer grows from the pool's 64 KiB by half each time, and one that held a body of
// at most pooledMax bytes is small enough to go back to the pool.
func TestGrownBy(t *testing.T) {
	for _, n := range []int{1, 64 << 10, 65<<10 + 1, 500 << 10, 800 << 10, pooledMax - 1, pooledMax, pooledMax + 1, 5 << 20} {
		c, steps := 64<<10, 0
		for c < n {
			g := grownBy(c)
			if g <= 0 || g > growStep {
				t.Fatalf("body of %d: grownBy(%d) = %d", n, c, g)
			}
			c += g
			steps++
		}
		if n <= pooledMax && c > pooledMax {
			t.Errorf("body of %d bytes: buffer of %d, past pooledMax %d", n, c, pooledMax)
		}
		if steps > 40 {
			t.Errorf("body of %d bytes: %d steps", n, steps)
		}
	}
}

// BenchmarkReadBody reads request bodies the size of the recorded traffic's mean and largest
// as PUT /events does, releasing each: allocated bytes per body are what the pool misses.
//
//	go test -run '^$' -bench ReadBody ./http/ingest/
func BenchmarkReadBody(b *testing.B) {
	for _, size := range []int{60 << 10, 800 << 10} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			data := bytes.Repeat([]byte("x"), size)
			budget := NewBudget(0)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				r := &http.Request{Body: io.NopCloser(bytes.NewReader(data)), ContentLength: -1}
				body, err := readBody(w, r, 10<<20, budget)
				if err != nil || len(body.buf) != size {
					b.Fatalf("readBody: %v, %d bytes", err, len(body.buf))
				}
				body.release()
			}
		})
	}
}
