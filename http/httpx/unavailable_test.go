package httpx

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/svc-dev/svc/sinks"
)

func TestStoreUnavailable(t *testing.T) {
	cause := errors.New("failed to connect to user=svc database=prod: 10.0.0.7:5432")
	cases := []struct {
		err  error
		code int
		msg  string
	}{
		{fmt.Errorf("postgres: read: %w", sinks.Unavailable(sinks.StoreMeta, cause)), 503, "the metadata store is unavailable"},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), 503, "did not answer in time"},
		{fmt.Errorf("read: %w", sinks.ErrNotFound), 0, ""},
		{cause, 0, ""},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		ok := StoreUnavailable(rec, c.err)
		if ok != (c.code != 0) {
			t.Errorf("%v: StoreUnavailable = %v", c.err, ok)
			continue
		}
		if !ok {
			continue
		}
		body := rec.Body.String()
		if rec.Code != c.code || rec.Header().Get("Retry-After") == "" || !strings.Contains(body, c.msg) {
			t.Errorf("%v: %d Retry-After %q %s", c.err, rec.Code, rec.Header().Get("Retry-After"), body)
		}
		for _, leak := range []string{"10.0.0.7", "user=", "database="} {
			if strings.Contains(body, leak) {
				t.Errorf("%v: body %s shows %q", c.err, body, leak)
			}
		}
	}
}
