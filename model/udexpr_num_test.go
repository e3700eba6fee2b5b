package model

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestUDExprNumbersAcrossTypes pins how int64 and float64 cmps treat attributes of the other
// numeric type: exactly, as mathematical values.
func TestUDExprNumbersAcrossTypes(t *testing.T) {
	attrs := []UDAttr{
		{"big", UDFloat64, "9.223372036854776e+18"}, // what ingest keeps for 9223372036854776000
		{"exact", UDInt64, "9007199254740993"},      // 2^53+1: no float64 holds it
		{"f", UDFloat64, "2.5"},
		{"max", UDInt64, "9223372036854775807"},
		{"n", UDInt64, "42"},
		{"neg", UDFloat64, "-9.223372036854776e+18"}, // -2^63
		{"two", UDFloat64, "2"},
	}
	cases := []struct {
		key, typ, op, value string
		want                bool
	}{
		{"big", "int64", "gt", "9223372036854775000", true}, // as a float64 the constant is 2^63 too
		{"big", "int64", "gt", "9223372036854775807", true},
		{"big", "int64", "gte", "9223372036854775807", true},
		{"big", "int64", "eq", "9223372036854775807", false},
		{"big", "int64", "neq", "9223372036854775807", true},
		{"big", "int64", "lt", "9223372036854775807", false},
		{"big", "float64", "gt", "9.2e18", true},
		{"big", "float64", "eq", "9223372036854775808", true},
		{"max", "float64", "lt", "9223372036854775808", true}, // MaxInt64 < 2^63, though float64(MaxInt64) == 2^63
		{"max", "float64", "eq", "9.223372036854776e18", false},
		{"max", "float64", "gte", "9.2e18", true},
		{"neg", "int64", "eq", "-9223372036854775808", true},
		{"neg", "int64", "lt", "-9223372036854775807", true},
		{"exact", "float64", "gt", "9007199254740992", true},
		{"exact", "float64", "eq", "9007199254740992", false},
		{"exact", "float64", "lt", "9007199254740994", true},
		{"n", "float64", "eq", "42", true},
		{"n", "float64", "gt", "41.5", true},
		{"n", "float64", "lt", "42.5", true},
		{"n", "float64", "lte", "41.999", false},
		{"n", "float64", "neq", "42.0001", true},
		{"two", "int64", "eq", "2", true},
		{"f", "int64", "gt", "2", true},
		{"f", "int64", "lt", "3", true},
		{"f", "int64", "eq", "2", false},
		{"f", "int64", "neq", "2", true},
		{"f", "int64", "lte", "2", false},
		{"f", "int64", "gte", "3", false},
	}
	for _, c := range cases {
		x, err := ParseUDExpr(cmpJSON(c.key, c.typ, c.op, strconv.Quote(c.value)))
		if err != nil {
			t.Fatal(err)
		}
		if got := x.Eval(attrs); got != c.want {
			t.Errorf("%s %s %s %s: %v, want %v", c.key, c.typ, c.op, c.value, got, c.want)
		}
	}
}

// TestUDCmpOnIntOnFloat checks that OnInt and OnFloat (what SQL translations use) decide every
// comparison as Eval does, and Eval against math/big, on values around the places where int64
// and float64 part: 2^53, 2^63, fractions, zero.
func TestUDCmpOnIntOnFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ints := func() int64 {
		switch r.IntN(6) {
		case 0:
			return math.MaxInt64 - r.Int64N(3000)
		case 1:
			return math.MinInt64 + r.Int64N(3000)
		case 2:
			return 1<<53 + r.Int64N(8) - 4
		case 3:
			return r.Int64N(20) - 10
		case 4:
			return -(1<<53 + r.Int64N(8) - 4)
		}
		return int64(r.Uint64())
	}
	floats := func() float64 {
		switch r.IntN(7) {
		case 0:
			return float64(ints())
		case 1:
			return math.Nextafter(float64(ints()), math.Inf(2*r.IntN(2)-1))
		case 2:
			return float64(r.IntN(40)-20) / 4
		case 3:
			return []float64{0x1p63, -0x1p63, 0x1p64, -0x1p64, math.MaxFloat64, -math.MaxFloat64, 0x1p53, 0}[r.IntN(8)]
		case 4:
			return (r.Float64() - 0.5) * 1e20
		}
		return (r.Float64() - 0.5) * 100
	}
	exact := func(f float64, n int64) int {
		return new(big.Float).SetFloat64(f).Cmp(new(big.Float).SetInt64(n))
	}
	ops := []UDOp{UDOpEq, UDOpNeq, UDOpGt, UDOpLt, UDOpGte, UDOpLte}
	for i := 0; i < 300_000; i++ {
		op := ops[r.IntN(len(ops))]
		fv, nv := floats(), ints()
		// A float64 attribute under an int64 cmp.
		c := UDCmp{Key: "k", Type: UDInt64, Op: op, Int: nv, Value: strconv.FormatInt(nv, 10)}
		want := compareOp(op, exact(fv, nv))
		if got := c.Eval([]UDAttr{{"k", UDFloat64, strconv.FormatFloat(fv, 'g', -1, 64)}}); got != want {
			t.Fatalf("Eval float %v %s int %d = %v, want %v", fv, op, nv, got, want)
		}
		o, k, always := c.OnFloat()
		if got := always > 0 || always == 0 && compareOp(o, cmp3(fv, k)); got != want {
			t.Fatalf("OnFloat: float %v %s int %d → %s %v (always %d) = %v, want %v", fv, op, nv, o, k, always, got, want)
		}
		// An int64 attribute under a float64 cmp.
		c = UDCmp{Key: "k", Type: UDFloat64, Op: op, Float: fv, Value: strconv.FormatFloat(fv, 'g', -1, 64)}
		want = compareOp(op, -exact(fv, nv))
		if got := c.Eval([]UDAttr{{"k", UDInt64, strconv.FormatInt(nv, 10)}}); got != want {
			t.Fatalf("Eval int %d %s float %v = %v, want %v", nv, op, fv, got, want)
		}
		o, ki, always := c.OnInt()
		if got := always > 0 || always == 0 && compareOp(o, cmp3(nv, ki)); got != want {
			t.Fatalf("OnInt: int %d %s float %v → %s %d (always %d) = %v, want %v", nv, op, fv, o, ki, always, got, want)
		}
		// The same type restates to itself.
		if o, k, a := c.OnFloat(); o != op || k != fv || a != 0 {
			t.Fatalf("OnFloat of a float64 cmp changed it")
		}
	}
}
