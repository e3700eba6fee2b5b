package badgermeta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// Key layout of the alerts (sinks.Alerts), beside that of store.go and disjoint from it.
// "Inverted" means every byte complemented, so that ascending key order is descending time,
// then descending id: the order AppAlerts lists and LatestAlerts picks in.
const (
	pAlert    = badgerdb.PrefixMeta + "al/" // alert id → model.Alert
	pAppAlert = badgerdb.PrefixMeta + "aa/" // app id, inverted timeKey(created), inverted alert id → type \0 entity id
	pDelivery = badgerdb.PrefixMeta + "dl/" // alert id → deliveryRec (a pending delivery)
	pDue      = badgerdb.PrefixMeta + "dd/" // timeKey(next attempt), alert id → nothing
)

// timeKeyLen is the length of timeKey's encoding.
const timeKeyLen = 12

var _ sinks.Alerts = (*Store)(nil)

// deliveryRec is a pending delivery; its alert is the record at pAlert.
type deliveryRec struct {
	Attempts    int
	NextAttempt time.Time
	LastError   string
}

func inverted(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = ^c
	}
	return out
}

func appAlertKey(a model.Alert) []byte {
	return key(pAppAlert, a.AppID[:], inverted(timeKey(a.CreatedAt)), inverted(a.ID[:]))
}

func dueKey(next time.Time, id uuid.UUID) []byte { return key(pDue, timeKey(next), id[:]) }

func utcAlert(a model.Alert) model.Alert {
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	return a
}

// checkAlert refuses strings that the other backend (Postgres text) cannot store and JSON
// would not give back as written.
func checkAlert(a model.Alert) error {
	for _, f := range []struct{ what, s string }{
		{"alert entity id", a.EntityID}, {"alert type", a.Type}, {"alert message", a.Message}, {"alert URL", a.URL},
	} {
		if err := sinks.CheckText(f.what, f.s); err != nil {
			return err
		}
	}
	return nil
}

// AddAlert looks up the id before the app, as Postgres's INSERT … ON CONFLICT DO NOTHING
// does: a stored id is "not added" whatever the app. Two concurrent adds of one id read the
// same key, so one of them conflicts, runs again and finds it stored.
func (s *Store) AddAlert(ctx context.Context, a model.Alert, deliver bool) (bool, error) {
	if err := checkAlert(a); err != nil {
		return false, err
	}
	a = utcAlert(a)
	var added bool
	err := s.update(ctx, func(txn *badger.Txn) error {
		added = false
		k := key(pAlert, a.ID[:])
		stored, err := exists(txn, k)
		if err != nil || stored {
			return err
		}
		if err := mustExist(txn, key(pApp, a.AppID[:]), "app "+a.AppID.String()); err != nil {
			return err
		}
		if err := set(txn, k, a); err != nil {
			return err
		}
		if err := txn.Set(appAlertKey(a), []byte(a.Type+"\x00"+a.EntityID)); err != nil {
			return fmt.Errorf("badgermeta: write index: %w", err)
		}
		if deliver {
			if err := set(txn, key(pDelivery, a.ID[:]), deliveryRec{NextAttempt: a.CreatedAt}); err != nil {
				return err
			}
			if err := setIndex(txn, dueKey(a.CreatedAt, a.ID)); err != nil {
				return err
			}
		}
		added = true
		return nil
	})
	if err != nil {
		return false, err
	}
	return added, nil
}

// AppAlerts walks the app's index from the newest alert before to, skipping offset keys
// without reading their records.
func (s *Store) AppAlerts(ctx context.Context, app uuid.UUID, from, to time.Time, limit, offset int) ([]model.Alert, error) {
	if limit < 1 || offset < 0 {
		return nil, fmt.Errorf("badgermeta: alerts page of limit %d and offset %d: %w", limit, offset, sinks.ErrInvalid)
	}
	prefix := key(pAppAlert, app[:])
	// Past every key of an alert created at to: those end in 16 id bytes, at most all 0xff.
	start := key(string(prefix), inverted(timeKey(to)), bytes.Repeat([]byte{0xff}, 16), []byte{0})
	last := inverted(timeKey(from)) // keys whose time part is greater are before from
	out := []model.Alert{}
	err := s.view(ctx, func(txn *badger.Txn) error {
		out = out[:0]
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		skip := offset
		for it.Seek(start); it.ValidForPrefix(prefix) && len(out) < limit; it.Next() {
			k := it.Item().Key()[len(prefix):]
			if bytes.Compare(k[:timeKeyLen], last) > 0 {
				break
			}
			if skip > 0 {
				skip--
				continue
			}
			var a model.Alert
			if err := get(txn, key(pAlert, inverted(k[timeKeyLen:])), &a, "alert of app "+app.String()); err != nil {
				return err
			}
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LatestAlerts walks the app's index from its newest alert down to since; the first key of
// each (type, entity) is its newest alert, ties broken by the greatest id. Only those
// alerts' records are read.
func (s *Store) LatestAlerts(ctx context.Context, app uuid.UUID, since time.Time) ([]model.Alert, error) {
	prefix := key(pAppAlert, app[:])
	last := inverted(timeKey(since))
	out := []model.Alert{}
	err := s.view(ctx, func(txn *badger.Txn) error {
		out = out[:0]
		seen := map[string]bool{}
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			k := item.Key()[len(prefix):]
			if bytes.Compare(k[:timeKeyLen], last) > 0 {
				break
			}
			var group string
			if err := item.Value(func(v []byte) error { group = string(v); return nil }); err != nil {
				return fmt.Errorf("badgermeta: read alert index of app %s: %w", app, err)
			}
			if seen[group] {
				continue
			}
			seen[group] = true
			var a model.Alert
			if err := get(txn, key(pAlert, inverted(k[timeKeyLen:])), &a, "alert of app "+app.String()); err != nil {
				return err
			}
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DueDeliveries walks the due index from the earliest next attempt up to now.
func (s *Store) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]model.Delivery, error) {
	if limit < 0 {
		return nil, fmt.Errorf("badgermeta: due deliveries limit %d: %w", limit, sinks.ErrInvalid)
	}
	prefix := []byte(pDue)
	bound := timeKey(now)
	out := []model.Delivery{}
	err := s.view(ctx, func(txn *badger.Txn) error {
		out = out[:0]
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix) && len(out) < limit; it.Next() {
			k := it.Item().Key()[len(prefix):]
			if bytes.Compare(k[:timeKeyLen], bound) > 0 {
				break
			}
			id := k[timeKeyLen:]
			var d deliveryRec
			if err := get(txn, key(pDelivery, id), &d, "pending delivery"); err != nil {
				return err
			}
			var a model.Alert
			if err := get(txn, key(pAlert, id), &a, "alert of a pending delivery"); err != nil {
				return err
			}
			out = append(out, model.Delivery{Alert: a, Attempts: d.Attempts, NextAttempt: d.NextAttempt, LastError: d.LastError})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) FinishDelivery(ctx context.Context, alertID uuid.UUID) error {
	return s.update(ctx, func(txn *badger.Txn) error {
		var d deliveryRec
		err := get(txn, key(pDelivery, alertID[:]), &d, "pending delivery of alert "+alertID.String())
		if errors.Is(err, sinks.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := del(txn, key(pDelivery, alertID[:])); err != nil {
			return err
		}
		return del(txn, dueKey(d.NextAttempt, alertID))
	})
}

// PostponeDelivery moves the delivery's due key; reading the record first makes a concurrent
// FinishDelivery or PostponeDelivery of it conflict, so one of them runs again.
func (s *Store) PostponeDelivery(ctx context.Context, alertID uuid.UUID, attempts int, next time.Time, lastError string) error {
	if err := sinks.CheckText("delivery error", lastError); err != nil {
		return err
	}
	next = next.UTC()
	return s.update(ctx, func(txn *badger.Txn) error {
		var d deliveryRec
		k := key(pDelivery, alertID[:])
		if err := get(txn, k, &d, "pending delivery of alert "+alertID.String()); err != nil {
			return err
		}
		if err := del(txn, dueKey(d.NextAttempt, alertID)); err != nil {
			return err
		}
		if err := set(txn, k, deliveryRec{Attempts: attempts, NextAttempt: next, LastError: lastError}); err != nil {
			return err
		}
		return setIndex(txn, dueKey(next, alertID))
	})
}
