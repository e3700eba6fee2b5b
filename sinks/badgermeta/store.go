// Package badgermeta is the embedded sinks.MetaStore: JSON records in the node's shared Badger
// database under badgerdb.PrefixMeta. Secondary indexes are written in the same transaction as
// the records they point to, and every change runs in a Badger transaction that is retried on
// a conflict, so Badger's optimistic concurrency control makes the atomic methods correct
// under concurrent calls: a transaction whose reads another one changed meanwhile is redone.
package badgermeta

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
)

// Key layout below badgerdb.PrefixMeta. Ids are their 16 raw bytes. No prefix is a prefix of
// another.
const (
	pUser     = badgerdb.PrefixMeta + "u/"  // user id → userRec
	pEmail    = badgerdb.PrefixMeta + "e/"  // lower-cased email → user id
	pTeam     = badgerdb.PrefixMeta + "t/"  // team id → model.Team
	pMember   = badgerdb.PrefixMeta + "m/"  // team id, user id → model.Member
	pUserTeam = badgerdb.PrefixMeta + "ut/" // user id, team id → nothing
	pApp      = badgerdb.PrefixMeta + "a/"  // app id → model.App
	pTeamApp  = badgerdb.PrefixMeta + "ta/" // team id, app id → nothing
	pKey      = badgerdb.PrefixMeta + "k/"  // API key → model.APIKey
	pAppKey   = badgerdb.PrefixMeta + "ak/" // app id, API key → nothing
	pSession  = badgerdb.PrefixMeta + "s/"  // session id → model.AuthSession
	pExpiry   = badgerdb.PrefixMeta + "se/" // expiry (timeKey), session id → nothing

	// Strings in the keys below are ended by a NUL byte, which sinks.CheckText keeps out of them, so
	// a key names one (version name, version code[, build type]) and no other.
	pBuild      = badgerdb.PrefixMeta + "b/"  // app id, version name \0 version code \0 build type → model.Build
	pMapping    = badgerdb.PrefixMeta + "mp/" // mapping id → model.Mapping
	pVerMapping = badgerdb.PrefixMeta + "mv/" // app id, version name \0 version code \0, created (timeKey), mapping id → nothing
	pConfig     = badgerdb.PrefixMeta + "c/"  // app id → configRec

	pInvite      = badgerdb.PrefixMeta + "iv/" // invite id → model.Invite
	pTeamInvite  = badgerdb.PrefixMeta + "it/" // team id, invite id → nothing
	pEmailInvite = badgerdb.PrefixMeta + "ie/" // ASCII-lowered email \0 invite id → nothing
	pThresholds  = badgerdb.PrefixMeta + "tp/" // app id → thresholdsRec
	pShortFilter = badgerdb.PrefixMeta + "sf/" // app id, code → model.ShortFilter
	pChatApp     = badgerdb.PrefixMeta + "ca/" // team id → model.ChatApp
)

// expireBatch bounds how many sessions one transaction of DeleteExpiredAuthSessions removes,
// to stay below Badger's transaction size limit.
const expireBatch = 1000

// Store is the Badger MetaStore. It shares the DB with the other embedded backends.
type Store struct {
	db *badger.DB
	// access keeps SessionAppRole's admitting answers (sinks.AccessCache). Every write of this
	// store drops them all: this store is the only writer of its records, and its writes are
	// few (a key's last use once a minute, onboarding marks, dashboard actions), so no change
	// of a session, an app or a membership can go unseen.
	access *sinks.AccessCache
}

var _ sinks.MetaStore = (*Store)(nil)

// New returns a MetaStore keeping its records in db, which the caller opened with
// badgerdb.Open and closes after Close. While it is open it must be the only writer of the
// records (its access cache knows only of its own writes).
func New(db *badger.DB) *Store {
	return &Store{db: db, access: sinks.NewAccessCache(sinks.DefaultAccessTTL, true)}
}

// userRec is a stored user: the user and the team created with them.
type userRec struct {
	model.User
	OwnTeam uuid.UUID
}

func key(prefix string, parts ...[]byte) []byte {
	n := len(prefix)
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 0, n)
	k = append(k, prefix...)
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

func emailKey(email string) []byte { return key(pEmail, []byte(strings.ToLower(email))) }

// timeKey encodes t so that byte order is time order: seconds since 1970 with the sign bit
// flipped, then nanoseconds.
func timeKey(t time.Time) []byte {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.Unix())^(1<<63))
	binary.BigEndian.PutUint32(b[8:], uint32(t.Nanosecond()))
	return b[:]
}

func expiryKey(s model.AuthSession) []byte { return key(pExpiry, timeKey(s.ExpiresAt), s.ID[:]) }

// update runs fn in a read-write transaction, redoing it while Badger reports a conflict
// (another transaction changed what fn read). fn must not keep state between runs.
func (s *Store) update(ctx context.Context, fn func(txn *badger.Txn) error) error {
	defer s.access.Drop(nil) // after the commit: a read that began before it is not kept
	for {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		err := s.db.Update(fn)
		if !errors.Is(err, badger.ErrConflict) {
			return err
		}
	}
}

func (s *Store) view(ctx context.Context, fn func(txn *badger.Txn) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return s.db.View(fn)
}

// ctxErr is the error of a call whose context has ended: an expired deadline is
// ErrUnavailable, as the MetaStore contract asks; a cancellation is the caller's own doing.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("badgermeta: %w", sinks.Unavailable(sinks.StoreMeta, err))
	}
	return fmt.Errorf("badgermeta: %w", err)
}

// get decodes the record at k into v; ErrNotFound (naming what) when there is none.
func get(txn *badger.Txn, k []byte, v any, what string) error {
	item, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return fmt.Errorf("badgermeta: %s: %w", what, sinks.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("badgermeta: read %s: %w", what, err)
	}
	return item.Value(func(b []byte) error {
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("badgermeta: decode %s: %w", what, err)
		}
		return nil
	})
}

func set(txn *badger.Txn, k []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("badgermeta: encode %T: %w", v, err)
	}
	if err := txn.Set(k, b); err != nil {
		return fmt.Errorf("badgermeta: write %T: %w", v, err)
	}
	return nil
}

func setIndex(txn *badger.Txn, k []byte) error {
	if err := txn.Set(k, nil); err != nil {
		return fmt.Errorf("badgermeta: write index: %w", err)
	}
	return nil
}

func del(txn *badger.Txn, k []byte) error {
	if err := txn.Delete(k); err != nil {
		return fmt.Errorf("badgermeta: delete: %w", err)
	}
	return nil
}

func exists(txn *badger.Txn, k []byte) (bool, error) {
	_, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("badgermeta: read: %w", err)
	}
	return true, nil
}

// mustExist returns ErrNotFound naming what when k is absent.
func mustExist(txn *badger.Txn, k []byte, what string) error {
	ok, err := exists(txn, k)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("badgermeta: %s: %w", what, sinks.ErrNotFound)
	}
	return nil
}

// mustBeFree returns ErrConflict naming what when k is taken.
func mustBeFree(txn *badger.Txn, k []byte, what string) error {
	ok, err := exists(txn, k)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("badgermeta: %s is taken: %w", what, sinks.ErrConflict)
	}
	return nil
}

// suffixes returns what follows prefix in every key that starts with it, in key order. Reading
// them through Item makes them part of the transaction's read set, so a concurrent change to
// any of them makes an update transaction conflict.
func suffixes(txn *badger.Txn, prefix []byte) [][]byte {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	var out [][]byte
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		out = append(out, bytes.Clone(it.Item().Key()[len(prefix):]))
	}
	return out
}

// members returns the team's memberships, unsorted.
func members(txn *badger.Txn, team uuid.UUID) ([]model.Member, error) {
	prefix := key(pMember, team[:])
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	var out []model.Member
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		var m model.Member
		err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &m) })
		if err != nil {
			return nil, fmt.Errorf("badgermeta: decode member of team %s: %w", team, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// retention returns the days to store for an app; 0 means the default when allowZero.
func retention(days int, allowZero bool) (int, error) {
	if days == 0 && allowZero {
		return model.DefaultRetentionDays, nil
	}
	if days < 30 || days > 365 {
		return 0, fmt.Errorf("badgermeta: retention of %d days is outside 30..365: %w", days, sinks.ErrInvalid)
	}
	return days, nil
}

// The utc functions put every time in UTC before it is stored, so reads return UTC.

func utcUser(u model.User) model.User {
	u.ConfirmedAt, u.LastSignInAt = u.ConfirmedAt.UTC(), u.LastSignInAt.UTC()
	u.CreatedAt, u.UpdatedAt = u.CreatedAt.UTC(), u.UpdatedAt.UTC()
	return u
}

func utcTeam(t model.Team) model.Team {
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	return t
}

func utcMember(m model.Member) model.Member {
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return m
}

func utcApp(a model.App) model.App {
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	return a
}

func utcKey(k model.APIKey) model.APIKey {
	k.CreatedAt, k.LastSeen = k.CreatedAt.UTC(), k.LastSeen.UTC()
	return k
}

func utcSession(s model.AuthSession) model.AuthSession {
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	return s
}

// byTime orders by creation time, then id, as the list methods promise.
func byTime(at1, at2 time.Time, id1, id2 uuid.UUID) int {
	if c := at1.Compare(at2); c != 0 {
		return c
	}
	return bytes.Compare(id1[:], id2[:])
}

// Ping reports whether the shared DB is open.
func (s *Store) Ping(ctx context.Context) error {
	if s.db.IsClosed() {
		return fmt.Errorf("badgermeta: database is closed")
	}
	return s.view(ctx, func(*badger.Txn) error { return nil })
}

// Close releases nothing: the shared DB belongs to whoever opened it.
func (s *Store) Close() error { return nil }
