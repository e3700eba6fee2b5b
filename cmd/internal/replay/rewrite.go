package replay

import (
	crand "crypto/rand"
	"math/rand/v2"
)

// A Rewriter renders replays of templates with fresh ids. Each worker owns one: it holds a
// private random source and scratch space, so rendering takes no lock and, once its buffers
// have grown, allocates nothing.
type Rewriter struct {
	rng      *rand.ChaCha8
	ids      []byte // fresh value of slot i at ids[i*36:], kindLen[kind] bytes long
	boundary string // multipart boundary, random per rewriter
}

// NewRewriter seeds a rewriter from crypto/rand: ids from different runs and workers never
// repeat (122 random bits per UUID), so nothing a previous run sent is deduplicated.
func NewRewriter() *Rewriter {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails on supported platforms (Go 1.24+)
	r := &Rewriter{rng: rand.NewChaCha8(seed)}
	b := make([]byte, 0, 40)
	b = append(b, "svc-replay-"...)
	b = appendHex64(b, r.rng.Uint64())
	r.boundary = string(b)
	return r
}

// Boundary is the multipart boundary RenderMultipart uses.
func (r *Rewriter) Boundary() string { return r.boundary }

const hexDigits = "0123456789abcdef"

func appendHex64(b []byte, v uint64) []byte {
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hexDigits[(v>>uint(shift))&0xf])
	}
	return b
}

// fill draws one fresh value per id slot of t.
func (r *Rewriter) fill(t *Template) {
	need := len(t.slots) * 36
	if cap(r.ids) < need {
		r.ids = make([]byte, need)
	}
	r.ids = r.ids[:need]
	for i, k := range t.slots {
		dst := r.ids[i*36 : i*36+36]
		switch k {
		case kUUID:
			hi, lo := r.rng.Uint64(), r.rng.Uint64()
			hi = hi&^0xf000 | 0x4000             // version 4
			lo = lo&^(0xc<<60) | 0x8<<60         // RFC 4122 variant
			putHex(dst[0:8], hi>>32, 8)          // time_low
			dst[8] = '-'                         //
			putHex(dst[9:13], hi>>16, 4)         // time_mid
			dst[13] = '-'                        //
			putHex(dst[14:18], hi, 4)            // time_hi_and_version
			dst[18] = '-'                        //
			putHex(dst[19:23], lo>>48, 4)        // clock_seq
			dst[23] = '-'                        //
			putHex(dst[24:36], lo&(1<<48-1), 12) // node
		case kSpan:
			v := r.rng.Uint64() | 1 // an all-zero span id is invalid in W3C trace context
			putHex(dst[0:16], v, 16)
		case kTrace:
			putHex(dst[0:16], r.rng.Uint64()|1, 16)
			putHex(dst[16:32], r.rng.Uint64(), 16)
		}
	}
}

// putHex writes the low n hex digits of v into dst[:n].
func putHex(dst []byte, v uint64, n int) {
	for i := n - 1; i >= 0; i-- {
		dst[i] = hexDigits[v&0xf]
		v >>= 4
	}
}

// shift is how far a replay moves the template's times: the latest event or span lands on now
// (Unix ns; 0 keeps the original times). It is a whole millisecond so that every original
// precision (SDKs send 3 or 8 digits) holds the shifted instant exactly.
func shift(t *Template, now int64) int64 {
	if now == 0 {
		return 0
	}
	d := now - t.maxTime
	return d - d%1_000_000
}

// Render appends a JSON replay of t to dst: fresh ids (consistent within the body: the same
// original id gets the same new one, so sessions, traces and parent links hold) and times
// shifted so the latest lands on now (Unix ns; 0 keeps them).
func (r *Rewriter) Render(dst []byte, t *Template, now int64) []byte {
	r.fill(t)
	return r.splice(dst, t, 0, int32(len(t.raw)), t.subs, shift(t, now))
}

// RenderMultipart appends a multipart/form-data replay of t to dst: one `event` part per event
// and one `span` part per span, as SDKs before JSON bodies sent them. The content type is
// "multipart/form-data; boundary=" + r.Boundary().
func (r *Rewriter) RenderMultipart(dst []byte, t *Template, now int64) []byte {
	r.fill(t)
	d := shift(t, now)
	for _, it := range t.items {
		dst = append(dst, "--"...)
		dst = append(dst, r.boundary...)
		if it.event {
			dst = append(dst, "\r\nContent-Disposition: form-data; name=\"event\"\r\n\r\n"...)
		} else {
			dst = append(dst, "\r\nContent-Disposition: form-data; name=\"span\"\r\n\r\n"...)
		}
		dst = r.splice(dst, t, it.start, it.end, t.subs[it.first:it.last], d)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, "--"...)
	dst = append(dst, r.boundary...)
	return append(dst, "--\r\n"...)
}

// splice copies t.raw[from:to] with subs (sorted, all inside the range) replaced.
func (r *Rewriter) splice(dst []byte, t *Template, from, to int32, subs []subst, delta int64) []byte {
	pos := from
	for i := range subs {
		s := &subs[i]
		dst = append(dst, t.raw[pos:s.start]...)
		switch s.kind {
		case kTime:
			if delta == 0 {
				dst = append(dst, t.raw[s.start:s.end]...)
			} else {
				dst = appendTime(dst, s.ns+delta, int(s.digits))
			}
		default:
			o := int(s.slot) * 36
			dst = append(dst, r.ids[o:o+kindLen[s.kind]]...)
		}
		pos = s.end
	}
	return append(dst, t.raw[pos:to]...)
}

// appendTime appends ns (Unix nanoseconds, UTC) as YYYY-MM-DDTHH:MM:SS[.fraction]Z with digits
// fractional digits (truncated). Hand-written: time.Time.AppendFormat is several times slower
// and this runs for every event.
func appendTime(dst []byte, ns int64, digits int) []byte {
	secs := ns / 1e9
	frac := ns % 1e9
	if frac < 0 {
		secs--
		frac += 1e9
	}
	days := secs / 86400
	rem := secs % 86400
	if rem < 0 {
		days--
		rem += 86400
	}
	y, m, d := civil(days)
	dst = append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+m/10), byte('0'+m%10), '-', byte('0'+d/10), byte('0'+d%10), 'T')
	h, mi, s := rem/3600, rem/60%60, rem%60
	dst = append(dst, byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':',
		byte('0'+s/10), byte('0'+s%10))
	if digits > 0 {
		dst = append(dst, '.')
		div := int64(1e8)
		for i := 0; i < digits; i++ {
			dst = append(dst, byte('0'+frac/div%10))
			div /= 10
		}
	}
	return append(dst, 'Z')
}

// civil converts days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's
// days-to-civil algorithm).
func civil(days int64) (y, m, d int64) {
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
