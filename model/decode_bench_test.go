package model

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time (user + system, all threads, so GC included) the process has used.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecodeBatch decodes and validates the whole real SDK corpus (every batch_*.json, 1836
// events and spans) per iteration. It reports items/s of wall time and items per CPU-second of
// the whole process (GC included): the machine is shared, so the second figure is the one that
// says what one core does.
func BenchmarkDecodeBatch(b *testing.B) {
	bodies := fixtureBatches(b)
	list := make([][]byte, 0, len(bodies))
	items, size := 0, 0
	for _, body := range bodies {
		bt, err := DecodeBatch(body, testApp, false)
		if err != nil {
			b.Fatal(err)
		}
		items += len(bt.Events) + len(bt.Spans)
		size += len(body)
		list = append(list, body)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		for _, body := range list {
			if _, err := DecodeBatch(body, testApp, false); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	total := float64(items) * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds(), "items/s")
	b.ReportMetric(total/(cpuTime(b)-cpu0).Seconds(), "items/cpu-s")
	b.ReportMetric(float64(items), "items/op")
}
