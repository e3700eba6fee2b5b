package node

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/sinks/eventstest"
)

// Numbers as real SDKs send them, end to end (docs/ingest-numbers.md): a recorded React Native
// batch whose crash carries Java's Long.MAX_VALUE as a JavaScript bridge writes it,
// 9223372036854776000 (just above int64), must be accepted (it was refused with 400, and SDKs
// drop a batch on 400 for good) and the crash found by a dashboard query comparing that
// attribute with gt, on both store setups.

// longMaxBatch is the recorded RN batch with user-defined attributes set on its exceptions:
// big=9223372036854776000 on the fatal one, big=-1 on the handled ones. Every other byte of
// a number stays as recorded (json.Number).
func longMaxBatch(t *testing.T) (body []byte, crashes, handled int) {
	t.Helper()
	raw := readFile(t, filepath.Join(eventstest.FixturesDir(t), "batch_ios_rn-example_sdk0.11.0_exception-http-custom-large266-spans-attach_1eecf66d.json"))
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b map[string]any
	if err := dec.Decode(&b); err != nil {
		t.Fatal(err)
	}
	for _, e := range b["events"].([]any) {
		ev := e.(map[string]any)
		if ev["type"] != "exception" {
			continue
		}
		if ev["exception"].(map[string]any)["severity"] == "fatal" {
			ev["user_defined_attribute"] = json.RawMessage(`{"big":9223372036854776000,"screen":"Home"}`)
			crashes++
		} else {
			ev["user_defined_attribute"] = json.RawMessage(`{"big":-1}`)
			handled++
		}
	}
	body, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if crashes != 1 || handled == 0 || !bytes.Contains(body, []byte(`"big":9223372036854776000`)) {
		t.Fatalf("the recorded batch changed: %d crashes, %d handled exceptions", crashes, handled)
	}
	return body, crashes, handled
}

func TestNumbersEndToEnd(t *testing.T) {
	for _, be := range analyticsBackends {
		t.Run(be.name, func(t *testing.T) {
			tn := startNode(t, be.harness, analyticsConfig)
			body, _, handled := longMaxBatch(t)
			if r := tn.putJSON(t, tn.key, uuid.NewString(), body); r.status != http.StatusOK {
				t.Fatalf("PUT /events with 9223372036854776000 in a user-defined attribute: %d %s", r.status, r.body)
			}
			tn.waitFlushed(t)
			token := tn.accessToken(t, tn.email)
			// The batch's events are of 2026-07-16 (UTC).
			window := url.Values{"from": {"2026-07-16T00:00:00Z"}, "to": {"2026-07-17T00:00:00Z"}}
			groups := func(path, expr string) (results []groupRes) {
				t.Helper()
				q := url.Values{"ud_expression": {expr}}
				for k, v := range window {
					q[k] = v
				}
				u := "/apps/" + tn.app.ID.String() + path + "?" + q.Encode()
				r := tn.do(t, http.MethodGet, u, token, nil, nil)
				if r.status != http.StatusOK {
					t.Fatalf("GET %s: %d %s", u, r.status, r.body)
				}
				p := decodeGroups(t, u, r.body, path == "/errorGroups")
				return p.Results
			}
			cmp := func(typ, op, value string) string {
				return `{"cmp":{"key":"big","type":"` + typ + `","op":"` + op + `","value":"` + value + `"}}`
			}
			for _, c := range []struct {
				path, expr string
				want       int // events counted over the groups found
			}{
				{"/crashGroups", cmp("int64", "gt", "9223372036854775000"), 1},
				{"/crashGroups", cmp("int64", "gt", "9223372036854775807"), 1}, // 2^63 > MaxInt64, compared exactly
				{"/crashGroups", cmp("float64", "gte", "9.2e18"), 1},
				{"/crashGroups", cmp("float64", "eq", "9223372036854776000"), 1},
				{"/crashGroups", cmp("int64", "eq", "9223372036854775807"), 0},
				{"/crashGroups", cmp("int64", "lt", "0"), 0},
				{"/errorGroups", cmp("int64", "lt", "0"), handled},
				{"/errorGroups", cmp("float64", "lt", "-0.5"), handled},
				{"/errorGroups", cmp("int64", "gt", "0"), 1}, // error groups hold the crash too
				{"/errorGroups", cmp("int64", "gt", "9223372036854775807"), 1},
			} {
				n := 0
				for _, g := range groups(c.path, c.expr) {
					n += g.Count
				}
				if n != c.want {
					t.Errorf("%s ud_expression=%s: %d events in the groups, want %d", c.path, c.expr, n, c.want)
				}
			}
			// The attribute is offered to the dashboard's filter builder as a float64.
			r := tn.do(t, http.MethodGet, "/apps/"+tn.app.ID.String()+"/filters?ud_attr_keys=1", token, nil, nil)
			if r.status != http.StatusOK || !strings.Contains(string(r.body), `{"key":"big","type":"float64"}`) {
				t.Errorf("GET /filters?ud_attr_keys=1: %d %s", r.status, clip(r.body))
			}
		})
	}
}
