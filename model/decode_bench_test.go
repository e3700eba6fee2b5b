package model

import (
	"encoding/json"
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

// Reference point for BenchmarkDecodeBatch on a shared machine: encoding/json merely unmarshalling
// the same corpus into typed structs (kind members left raw, nothing validated). docs/architecture.md ("Dependency traps")
// measured ~45k items/s per core for this on an idle machine; compare the two side by side.
type refAttributes struct {
	InstallationID     string  `json:"installation_id"`
	AppVersion         string  `json:"app_version"`
	AppBuild           string  `json:"app_build"`
	AppUniqueID        string  `json:"app_unique_id"`
	Platform           string  `json:"platform"`
	SDKVersion         string  `json:"measure_sdk_version"`
	ThreadName         string  `json:"thread_name"`
	UserID             *string `json:"user_id"`
	DeviceName         string  `json:"device_name"`
	DeviceModel        string  `json:"device_model"`
	DeviceManufacturer string  `json:"device_manufacturer"`
	DeviceType         string  `json:"device_type"`
	DeviceIsFoldable   bool    `json:"device_is_foldable"`
	DeviceIsPhysical   bool    `json:"device_is_physical"`
	DeviceDensityDPI   uint16  `json:"device_density_dpi"`
	DeviceWidthPx      uint16  `json:"device_width_px"`
	DeviceHeightPx     uint16  `json:"device_height_px"`
	DeviceDensity      float32 `json:"device_density"`
	DeviceLocale       string  `json:"device_locale"`
	LowPower           bool    `json:"device_low_power_mode"`
	Thermal            bool    `json:"device_thermal_throttling_enabled"`
	OSName             string  `json:"os_name"`
	OSVersion          string  `json:"os_version"`
	OSPageSize         uint8   `json:"os_page_size"`
	NetworkType        string  `json:"network_type"`
	NetworkProvider    string  `json:"network_provider"`
	NetworkGeneration  string  `json:"network_generation"`
	DeviceCPUArch      string  `json:"device_cpu_arch"`
	SessionStartTime   string  `json:"session_start_time"`
}

type refEvent struct {
	ID            string                     `json:"id"`
	Type          string                     `json:"type"`
	SessionID     string                     `json:"session_id"`
	Timestamp     string                     `json:"timestamp"`
	UserTriggered bool                       `json:"user_triggered"`
	Attribute     refAttributes              `json:"attribute"`
	UserDefined   map[string]json.RawMessage `json:"user_defined_attribute"`
	Attachments   []struct {
		ID, Name, Type string
		Bytes          []byte `json:"bytes"`
	} `json:"attachments"`
}

type refSpan struct {
	Name, TraceID, SpanID, SessionID string
	Status                           int
	Attributes                       refAttributes `json:"attributes"`
	Checkpoints                      []struct{ Name, Timestamp string }
}

func BenchmarkDecodeBatchEncodingJSONReference(b *testing.B) {
	bodies := fixtureBatches(b)
	items := 0
	for _, body := range bodies {
		rb := splitBatch(b, body)
		items += len(rb.Events) + len(rb.Spans)
	}
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		for _, body := range bodies {
			var v struct {
				Events []refEvent `json:"events"`
				Spans  []refSpan  `json:"spans"`
			}
			if err := json.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	total := float64(items) * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds(), "items/s")
	b.ReportMetric(total/(cpuTime(b)-cpu0).Seconds(), "items/cpu-s")
}
