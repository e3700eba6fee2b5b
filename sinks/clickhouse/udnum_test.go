package clickhouse

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// TestUDNumbersAcrossTypesSQL: int64 and float64 cmps on attributes of the other numeric type
// (model.UDCmp: exact, across the types) select exactly what Eval selects, on stored rows whose
// values sit where int64 and float64 part: around 2^53 and 2^63, fractions near integers, and
// the float64 2^63 ingest keeps for 9223372036854776000.
func TestUDNumbersAcrossTypesSQL(t *testing.T) {
	s := migrated(t)
	app := uuid.New()
	r := rand.New(rand.NewPCG(5, 6))
	ints := []int64{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - 1024, math.MinInt64, math.MinInt64 + 1,
		1 << 53, 1<<53 + 1, -(1<<53 + 1), 0, 2, -3, 42}
	floats := []float64{0x1p63, -0x1p63, 0x1p64, 0x1p53, 0x1p53 + 2, 9.2e18, math.Nextafter(0x1p63, 0), 2, 2.5, -2.5,
		41.999999999999, 42.000000000001, 0, 5e-324, math.MaxFloat64, -math.MaxFloat64}
	for i := 0; i < 6; i++ {
		ints = append(ints, 1<<53+r.Int64N(64)-32, math.MaxInt64-r.Int64N(1<<12))
		floats = append(floats, math.Nextafter(0x1p63, math.Inf(-1))-float64(r.IntN(8))*1024, float64(1<<53+r.Int64N(64)-32))
	}
	var events []model.Event
	add := func(a model.UDAttr) {
		events = append(events, model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "custom",
			Timestamp: int64(len(events)), UserDefined: []model.UDAttr{a}})
	}
	for _, n := range ints {
		add(model.UDAttr{Key: "n", Type: model.UDInt64, Value: strconv.FormatInt(n, 10)})
	}
	for _, f := range floats {
		add(model.UDAttr{Key: "n", Type: model.UDFloat64, Value: strconv.FormatFloat(f, 'g', -1, 64)})
	}
	add(model.UDAttr{Key: "n", Type: model.UDString, Value: "9223372036854775807"})
	add(model.UDAttr{Key: "n", Type: model.UDBool, Value: "true"})
	if err := s.WriteEvents(ctxT(t), events); err != nil {
		t.Fatal(err)
	}
	var cmps []*model.UDExpr
	for _, op := range []model.UDOp{model.UDOpEq, model.UDOpNeq, model.UDOpGt, model.UDOpLt, model.UDOpGte, model.UDOpLte} {
		for _, n := range ints {
			cmps = append(cmps, &model.UDExpr{Cmp: &model.UDCmp{Key: "n", Type: model.UDInt64, Op: op, Int: n, Value: strconv.FormatInt(n, 10)}})
		}
		for _, f := range floats {
			cmps = append(cmps, &model.UDExpr{Cmp: &model.UDCmp{Key: "n", Type: model.UDFloat64, Op: op, Float: f, Value: strconv.FormatFloat(f, 'g', -1, 64)}})
		}
	}
	checkUDExprSQL(t, s, app, events, cmps)
}
