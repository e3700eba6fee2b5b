package model

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestFastBase64MatchesStd checks that fastBase64 accepts exactly the inputs encoding/base64
// accepts and decodes them to the same bytes: valid encodings of every length up to 268
// characters (across the vector loop's 32-character steps and its 45-character minimum), with
// line breaks, truncated, and with one character replaced, at a random place, by each of
// nine that are not in the alphabet or not allowed there.
func TestFastBase64MatchesStd(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var inputs [][]byte
	for n := 0; n <= 200; n++ {
		raw := make([]byte, n)
		for i := range raw {
			raw[i] = byte(rng.UintN(256))
		}
		enc := []byte(base64.StdEncoding.EncodeToString(raw))
		inputs = append(inputs, enc)
		if len(enc) > 0 {
			for _, bad := range []byte{'=', '\n', '\r', '-', '_', ' ', 0, 0xff, '.'} {
				c := bytes.Clone(enc)
				c[rng.IntN(len(c))] = bad
				inputs = append(inputs, c)
			}
			inputs = append(inputs, enc[:len(enc)-1]) // truncated
			withBreaks := bytes.Clone(enc)
			for i := 76; i < len(withBreaks); i += 77 {
				withBreaks = append(withBreaks[:i], append([]byte{'\n'}, withBreaks[i:]...)...)
			}
			inputs = append(inputs, withBreaks)
		}
	}
	inputs = append(inputs, []byte("===="), []byte("QQ=="), []byte("QQ="), []byte("QR=="), []byte("Q\r\nQ=="))
	for _, in := range inputs {
		want := make([]byte, base64.StdEncoding.DecodedLen(len(in)))
		wn, werr := base64.StdEncoding.Decode(want, in)
		got := make([]byte, base64.StdEncoding.DecodedLen(len(in)))
		gn, gerr := fastBase64.Decode(got, in)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/base64 says %v, fastBase64 %v", in, werr, gerr)
		}
		if werr == nil && !bytes.Equal(want[:wn], got[:gn]) {
			t.Fatalf("%q: decoded %x, want %x", in, got[:gn], want[:wn])
		}
	}
}

// TestInlineBytesError: a corrupt inline attachment is rejected with encoding/base64's message,
// its offset counted from the start of the value even past the fast decoder's vector loop.
func TestInlineBytesError(t *testing.T) {
	body := bytes.Clone(findFixture(t, "bugreport-lifecycleswiftui-screenview-inline-bytes-attach_6fe596a7"))
	at := bytes.Index(body, []byte(`"bytes":"`))
	if at < 0 {
		t.Fatal("fixture has no inline attachment")
	}
	at += len(`"bytes":"`)
	if end := bytes.IndexByte(body[at:], '"'); end < 200 {
		t.Fatalf("first inline attachment is %d characters, want 200 or more", end)
	}
	body[at+150] = '!'
	_, err := DecodeBatch(body, testApp, false)
	if err == nil || !strings.Contains(err.Error(), "must be standard base64: illegal base64 data at input byte 150") {
		t.Fatalf("DecodeBatch: %v, want the offset 150 named", err)
	}
}

// BenchmarkBase64Decode: one inline attachment of 1,468 characters (the recorded traffic's
// median is 1,548), by encoding/base64 and by fastBase64.
func BenchmarkBase64Decode(b *testing.B) {
	src := []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xa5, 0x3c, 0x7e}, 367)))
	dst := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
	for _, bc := range []struct {
		name string
		dec  func(dst, src []byte) (int, error)
	}{{"std", base64.StdEncoding.Decode}, {"fast", fastBase64.Decode}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := bc.dec(dst, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestInlineBytesPaths: an inline attachment's "bytes" decodes to what encoding/json and
// encoding/base64 make of it, or is refused when either refuses it: escapes (slashes escaped by
// some JSON encoders), line breaks raw and escaped, characters outside the alphabet, non-ASCII,
// empty and long values, with the fast decoder's vector loop and its fallback both involved.
func TestInlineBytesPaths(t *testing.T) {
	body := findFixture(t, "bugreport-lifecycleswiftui-screenview-inline-bytes-attach_6fe596a7")
	at := bytes.Index(body, []byte(`"bytes":"`))
	if at < 0 {
		t.Fatal("fixture has no inline attachment")
	}
	at += len(`"bytes":`)
	end := at + 1 + bytes.IndexByte(body[at+1:], '"') + 1 // past the closing quote
	long := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("svc?>~"), 300))
	for _, value := range []string{
		`""`,
		`"QQ=="`,
		`"` + long + `"`,
		`"` + strings.ReplaceAll(long, "/", `\/`) + `"`, // an encoder that escapes slashes
		`"` + long[:100] + `\n` + long[100:] + `"`,      // an escaped line break: base64 skips it
		`"` + long[:100] + "\n" + long[100:] + `"`,      // a raw one: not JSON
		`"` + long[:100] + "\r" + long[100:] + `"`,
		`"` + long[:100] + "\t" + long[100:] + `"`,
		`"` + long[:100] + `\u0041` + long[101:] + `"`,
		`"` + long[:100] + "é" + long[102:] + `"`,
		`"` + long[:100] + "!" + long[101:] + `"`,
		`"` + long[:len(long)-1] + `"`,
		`"` + long[:100] + `\"` + long[102:] + `"`,
		` "QQ=="`,
		`12`,
	} {
		b := append(append(append([]byte{}, body[:at]...), value...), body[end:]...)
		batch, err := DecodeBatch(b, testApp, false)
		var s string
		jerr := json.Unmarshal([]byte(value), &s)
		want, berr := base64.StdEncoding.DecodeString(s)
		switch {
		case jerr != nil || berr != nil:
			if err == nil {
				t.Errorf("%.60q: accepted; encoding/json says %v, encoding/base64 %v", value, jerr, berr)
			}
		case err != nil:
			t.Errorf("%.60q: %v", value, err)
		case len(batch.Inline) == 0 || !bytes.Equal(batch.Inline[0].Bytes, want):
			t.Errorf("%.60q: decoded to something else than %d bytes", value, len(want))
		}
	}
}
