package badgermeta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// pBugStatus keys bug reports' statuses (sinks.BugReportStatuses): app id, report id →
// bugStatusRec. It lives here, beside the code that uses it; like the prefixes of store.go it
// is no prefix of another.
const pBugStatus = badgerdb.PrefixMeta + "br/"

var _ sinks.BugReportStatuses = (*Store)(nil)

// bugStatusRec is a stored status.
type bugStatusRec struct {
	Status    model.BugReportStatus
	UpdatedAt time.Time
}

// SetBugReportStatus stores a report's status; see sinks.BugReportStatuses.
func (s *Store) SetBugReportStatus(ctx context.Context, st model.BugReportState) error {
	if err := sinks.CheckBugReportState(st); err != nil {
		return err
	}
	rec := bugStatusRec{Status: st.Status, UpdatedAt: st.UpdatedAt.UTC()}
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, st.AppID[:]), "app "+st.AppID.String()); err != nil {
			return err
		}
		return set(txn, key(pBugStatus, st.AppID[:], st.ID[:]), rec)
	})
}

// BugReportStates reads the states of the given reports, one point read each.
func (s *Store) BugReportStates(ctx context.Context, app uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]model.BugReportState, error) {
	out := make(map[uuid.UUID]model.BugReportState, len(ids))
	err := s.view(ctx, func(txn *badger.Txn) error {
		clear(out)
		for _, id := range ids {
			var rec bugStatusRec
			err := get(txn, key(pBugStatus, app[:], id[:]), &rec, "bug report status "+id.String())
			if errors.Is(err, sinks.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			out[id] = model.BugReportState{AppID: app, ID: id, Status: rec.Status, UpdatedAt: rec.UpdatedAt.UTC()}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgermeta: bug report states of app %s: %w", app, err)
	}
	return out, nil
}

// ClosedBugReports walks the app's stored statuses; keys sort by report id, which is byte
// order.
func (s *Store) ClosedBugReports(ctx context.Context, app uuid.UUID) ([]uuid.UUID, error) {
	out := []uuid.UUID{}
	prefix := key(pBugStatus, app[:])
	err := s.view(ctx, func(txn *badger.Txn) error {
		out = out[:0]
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			var rec bugStatusRec
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &rec) }); err != nil {
				return err
			}
			if rec.Status != model.BugReportClosed {
				continue
			}
			k := item.Key()
			id, err := uuid.FromBytes(bytes.Clone(k[len(prefix):]))
			if err != nil {
				return fmt.Errorf("bug report status key %x: %w", k, err)
			}
			out = append(out, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgermeta: closed bug reports of app %s: %w", app, err)
	}
	return out, nil
}
