package dashboard

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
)

// TestLiveJourneyForeignReply: a live journey reply this node cannot read (one of a node
// before the packed journey, during a cluster's upgrade) is not taken for an empty journey:
// the store answers, and the node says why in its log.
func TestLiveJourneyForeignReply(t *testing.T) {
	db, err := badgerdb.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	older := &actorpb.LiveReply{Ok: true}
	// Field 4 as the older node sent it: a link from "A" to "B" of 2 sessions.
	older.ProtoReflect().SetUnknown([]byte{0x22, 0x08, 0x0a, 0x01, 'A', 0x12, 0x01, 'B', 0x18, 0x02})
	cases := []struct {
		name   string
		reply  *actorpb.LiveReply
		wantBy string
		logged bool
	}{
		{"a reply of this node's", journeyReply(), byLive, false},
		{"a reply of an older node", older, byStore, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			a := &API{Live: replyLive{c.reply}, Analytics: badgerevents.New(db), Log: slog.New(slog.NewTextHandler(&log, nil))}
			ctx := context.WithValue(context.Background(), appKey, model.App{ID: uuid.New(), RetentionDays: 30})
			w := httptest.NewRecorder()
			a.journey(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/journey", nil))
			if w.Code != http.StatusOK || w.Header().Get(HeaderAnsweredBy) != c.wantBy {
				t.Fatalf("%d, answered by %q, want 200 by %q: %s", w.Code, w.Header().Get(HeaderAnsweredBy), c.wantBy, w.Body)
			}
			if got := strings.Contains(log.String(), "live journey reply not used"); got != c.logged {
				t.Errorf("logged %v, want %v: %s", got, c.logged, log.String())
			}
		})
	}
}
