package node

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgerevents"
)

// TestDataDirLayouts: a new data directory keeps events in their own Badger database; one
// written before the split keeps reading and writing them in the main one.
func TestDataDirLayouts(t *testing.T) {
	ctx := context.Background()
	app := uuid.New()
	old := model.Event{ID: uuid.New(), AppID: app, SessionID: uuid.New(), Type: "custom", Timestamp: 1, Payload: []byte(`{"name":"old"}`)}

	oldDir := t.TempDir()
	db, err := badgerdb.Open(filepath.Join(oldDir, "badger"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := badgerevents.New(db).WriteEvents(ctx, []model.Event{old}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	for _, c := range []struct {
		name, dir string
		wantOld   bool
	}{{"new", t.TempDir(), false}, {"written before the split", oldDir, true}} {
		t.Run(c.name, func(t *testing.T) {
			tn := startNode(t, "embedded", func(cfg *Config) { cfg.DataDir = c.dir })
			_, err := tn.Events.Event(ctx, app, old.ID)
			if got := err == nil; got != c.wantOld {
				t.Fatalf("old event readable: %v (%v), want %v", got, err, c.wantOld)
			}
			fresh := old
			fresh.ID = uuid.New()
			if err := tn.Events.WriteEvents(ctx, []model.Event{fresh}); err != nil {
				t.Fatal(err)
			}
			if _, err := tn.Events.Event(ctx, app, fresh.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}
