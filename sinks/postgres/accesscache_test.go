package postgres

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/metatest"
)

// openCached opens a store with the access cache and waits until its listener listens.
func openCached(t *testing.T, dsn string) *Store { t.Helper(); return openCachedLog(t, dsn, nil) }

// openCachedLog is openCached with a logger for the listener.
func openCachedLog(t *testing.T, dsn string, log *slog.Logger) *Store {
	t.Helper()
	s, err := OpenWith(t.Context(), dsn, Options{AccessCache: true, Logger: log})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	waitListening(t, s, true)
	return s
}

// waitListening waits up to 10 s for the store's listener to listen (or to have stopped).
func waitListening(t *testing.T, s *Store, want bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		on := s.AccessCacheListening()
		if on == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("access cache listening = %v after 10 s, want %v", on, want)
		}
	}
}

// Conformance with the cache on: every AppAccess rule (a changed role or a removed membership
// seen by the next call) holds while answers are kept.
func TestConformanceAccessCache(t *testing.T) {
	metatest.Run(t, func(t *testing.T) sinks.MetaStore { return openCached(t, migrated(t)) })
}

// accessFixture is a member with a session on an app, stored through s.
type accessFixture struct {
	user    model.User
	team    model.Team
	app     model.App
	session model.AuthSession
}

func newAccessFixture(t *testing.T, s *Store) accessFixture {
	t.Helper()
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	id := uuid.New()
	f := accessFixture{
		user: model.User{ID: id, Name: "u", Email: id.String() + "@example.com", CreatedAt: now, UpdatedAt: now},
		team: model.Team{ID: uuid.New(), Name: "t", CreatedAt: now, UpdatedAt: now},
	}
	f.app = model.App{ID: uuid.New(), TeamID: f.team.ID, Name: "a", RetentionDays: 30, CreatedAt: now, UpdatedAt: now}
	f.session = model.AuthSession{ID: uuid.New(), UserID: id, RefreshID: uuid.New(), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateUser(ctx, f.user, f.team); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateApp(ctx, f.app, model.APIKey{AppID: f.app.ID, Key: "k" + f.app.ID.String(), CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAuthSession(ctx, f.session); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f accessFixture) key() sinks.AccessKey {
	return sinks.AccessKey{Session: f.session.ID, App: f.app.ID, User: f.user.ID}
}

func (f accessFixture) read(s *Store) (sinks.SessionAccess, error) {
	return s.SessionAppRole(context.Background(), f.session.ID, f.app.ID, f.user.ID)
}

// TestAccessCacheSeesChanges: a kept answer goes when what it read changes, whether the change
// is this store's (at once) or another node's (by the notice, within seconds), and an answer is
// kept at all (a change the triggers do not announce is not seen while it is kept).
func TestAccessCacheSeesChanges(t *testing.T) {
	old := accessTTL
	accessTTL = time.Hour // only a notice or this store's own change can drop an answer
	t.Cleanup(func() { accessTTL = old })
	dsn := migrated(t)
	cached := openCached(t, dsn)
	other := openStore(t, dsn) // another node: no cache, its changes reach cached only by notice

	later := time.Now().UTC().Truncate(time.Microsecond).Add(time.Minute)
	cases := []struct {
		name   string
		change func(t *testing.T, s *Store, f accessFixture) error
		seen   func(acc sinks.SessionAccess, err error) bool
		viaSQL bool // a change no method of the store makes: only a notice tells of it
	}{
		{"session deleted",
			func(t *testing.T, s *Store, f accessFixture) error {
				return s.DeleteAuthSession(t.Context(), f.session.ID)
			},
			func(_ sinks.SessionAccess, err error) bool { return errors.Is(err, sinks.ErrNotFound) }, false},
		{"session rotated",
			func(t *testing.T, s *Store, f accessFixture) error {
				return s.RotateAuthSession(t.Context(), f.session.ID, f.session.RefreshID, uuid.New(), later.Add(2*time.Hour))
			},
			func(acc sinks.SessionAccess, err error) bool {
				return err == nil && acc.Session.ExpiresAt.Equal(later.Add(2*time.Hour))
			}, false},
		{"role changed",
			func(t *testing.T, s *Store, f accessFixture) error {
				if err := addOwner(t, s, f.team.ID, later); err != nil {
					return err
				}
				return s.SetMemberRole(t.Context(), f.team.ID, f.user.ID, model.RoleViewer, later)
			},
			func(acc sinks.SessionAccess, err error) bool { return err == nil && acc.Role == model.RoleViewer }, false},
		{"membership removed",
			func(t *testing.T, s *Store, f accessFixture) error {
				if err := addOwner(t, s, f.team.ID, later); err != nil {
					return err
				}
				return s.RemoveMember(t.Context(), f.team.ID, f.user.ID)
			},
			func(acc sinks.SessionAccess, err error) bool {
				return err == nil && errors.Is(acc.AppErr, sinks.ErrNotFound)
			}, false},
		{"app renamed",
			func(t *testing.T, s *Store, f accessFixture) error {
				a := f.app
				a.Name, a.UpdatedAt = "renamed", later
				return s.UpdateApp(t.Context(), a)
			},
			func(acc sinks.SessionAccess, err error) bool { return err == nil && acc.App.Name == "renamed" }, false},
		{"app onboarded",
			func(t *testing.T, s *Store, f accessFixture) error {
				return s.MarkOnboarded(t.Context(), f.app.ID, sinks.OnboardingMark{At: later, OSNames: []string{"android"}})
			},
			func(acc sinks.SessionAccess, err error) bool { return err == nil && acc.App.Onboarded }, false},
		{"sessions truncated",
			func(t *testing.T, s *Store, f accessFixture) error {
				_, err := s.pool.Exec(t.Context(), `TRUNCATE auth_sessions`)
				return err
			},
			func(_ sinks.SessionAccess, err error) bool { return errors.Is(err, sinks.ErrNotFound) }, true},
	}
	for _, c := range cases {
		t.Run(c.name+"/by this node", func(t *testing.T) {
			if c.viaSQL {
				t.Skip("made in SQL: no method of this node")
			}
			// Hold the notices back: the store's own change must drop the answer by itself.
			hold := make(chan struct{})
			wait := func(string) bool { <-hold; return true }
			testHookNotice.Store(&wait)
			t.Cleanup(func() { testHookNotice.Store(nil); close(hold) })
			f := newAccessFixture(t, cached)
			prime(t, cached, f)
			if err := c.change(t, cached, f); err != nil {
				t.Fatal(err)
			}
			if acc, err := f.read(cached); !c.seen(acc, err) {
				t.Fatalf("the next read after the change = %+v, %v: the change is not seen", acc, err)
			}
		})
		t.Run(c.name+"/by another node", func(t *testing.T) {
			f := newAccessFixture(t, cached)
			prime(t, cached, f)
			if err := c.change(t, other, f); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
				acc, err := f.read(cached)
				if c.seen(acc, err) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("5 s after another node's change the cached store still answers %+v, %v", acc, err)
				}
			}
		})
	}

	t.Run("kept", func(t *testing.T) {
		f := newAccessFixture(t, cached)
		prime(t, cached, f)
		renameUnannounced(t, other, f.app.ID, "unannounced")
		time.Sleep(200 * time.Millisecond)
		if acc, err := f.read(cached); err != nil || acc.App.Name != f.app.Name {
			t.Fatalf("read = %+v, %v; want the kept answer (name %q)", acc, err, f.app.Name)
		}
		if acc, err := f.read(other); err != nil || acc.App.Name != "unannounced" {
			t.Fatalf("uncached read = %+v, %v; want the new name", acc, err)
		}
	})
}

// addOwner adds a new user as another owner of team, so the fixture's user may leave it.
func addOwner(t *testing.T, s *Store, team uuid.UUID, at time.Time) error {
	id := uuid.New()
	u := model.User{ID: id, Name: "o", Email: id.String() + "@example.com", CreatedAt: at, UpdatedAt: at}
	if err := s.CreateUser(t.Context(), u, model.Team{ID: uuid.New(), Name: "o", CreatedAt: at, UpdatedAt: at}); err != nil {
		return err
	}
	return s.AddMember(t.Context(), model.Member{TeamID: team, UserID: id, Role: model.RoleOwner, CreatedAt: at, UpdatedAt: at})
}

// prime reads f through s so that s keeps the answer, and checks that it does.
func prime(t *testing.T, s *Store, f accessFixture) {
	t.Helper()
	if acc, err := f.read(s); err != nil || acc.AppErr != nil || acc.Role != model.RoleOwner {
		t.Fatalf("first read = %+v, %v", acc, err)
	}
	if !s.access.Kept(f.key()) {
		t.Fatal("the admitted answer was not kept")
	}
}

// renameUnannounced renames an app with the triggers off for the statement (replica mode), as
// a change no notice announces.
func renameUnannounced(t *testing.T, s *Store, app uuid.UUID, name string) {
	t.Helper()
	err := pgx.BeginFunc(t.Context(), s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		_, err := tx.Exec(t.Context(), `UPDATE apps SET name = $2 WHERE id = $1`, app, name)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAccessCacheListener: a quiet connection keeps listening (its pings pass); a lost one
// stops the cache keeping answers, and every read goes to the database until it listens again.
func TestAccessCacheListener(t *testing.T) {
	oldPing, oldWait, oldRetry, oldTTL := listenPing, probeWait, listenRetry, accessTTL
	listenPing, probeWait, listenRetry, accessTTL = 50*time.Millisecond, time.Second, 300*time.Millisecond, time.Hour
	t.Cleanup(func() { listenPing, probeWait, listenRetry, accessTTL = oldPing, oldWait, oldRetry, oldTTL })
	dsn := migrated(t)
	var logged lockedBuffer
	cached := openCachedLog(t, dsn, slog.New(slog.NewTextHandler(&logged, nil)))
	other := openStore(t, dsn)

	f := newAccessFixture(t, cached)
	pid := listenerPID(t, other)
	time.Sleep(10 * listenPing) // quiet: several timed-out waits and probes
	waitListening(t, cached, true)
	if got := listenerPID(t, other); got != pid {
		t.Fatalf("the listener's backend changed from %d to %d over a quiet spell: a timed-out wait ended its connection", pid, got)
	}
	checkHeard(t, cached, other, f)

	f = newAccessFixture(t, cached)
	prime(t, cached, f)
	var n int
	err := other.pool.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, listenerName).Scan(&n)
	if err != nil || n == 0 {
		t.Fatalf("terminating the listener: %d backends, %v", n, err)
	}
	checkDeaf(t, cached, other, f, "while cut off")
	waitListening(t, cached, true) // it connects again after listenRetry
	checkHeard(t, cached, other, f)

	// A connection that stays up but passes no notice on (a proxy that pools transactions):
	// its probe does not come back, so nothing is kept.
	f = newAccessFixture(t, cached)
	prime(t, cached, f)
	lose := func(string) bool { return false }
	testHookNotice.Store(&lose)
	waitListening(t, cached, false)
	time.Sleep(3 * probeWait) // more tries, each failing
	testHookNotice.Store(nil)
	checkDeaf(t, cached, other, f, "unheard")
	waitListening(t, cached, true)

	// Two spells without listening: two warnings and two lines saying it listens again, not a
	// line for every try.
	out := logged.String()
	if w, i := strings.Count(out, "not listening for access changes"), strings.Count(out, "listening for access changes again"); w != 2 || i != 2 {
		t.Errorf("log has %d warnings and %d recoveries, want 2 of each:\n%s", w, i, out)
	}
}

// lockedBuffer is a bytes.Buffer safe for the listener's goroutine and the test's.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// checkHeard primes cached with f, has other delete f's session and waits for cached to refuse it.
func checkHeard(t *testing.T, cached, other *Store, f accessFixture) {
	t.Helper()
	prime(t, cached, f)
	if err := other.DeleteAuthSession(t.Context(), f.session.ID); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, cached, f)
}

// checkDeaf waits until cached stops listening and checks that it then keeps nothing: f's kept
// answer is gone, and a change no notice announces is seen by the next read.
func checkDeaf(t *testing.T, cached, other *Store, f accessFixture, name string) {
	t.Helper()
	waitListening(t, cached, false)
	if cached.access.Kept(f.key()) {
		t.Fatal("an answer is still kept while not listening")
	}
	renameUnannounced(t, other, f.app.ID, name)
	if acc, err := f.read(cached); err != nil || acc.App.Name != name {
		t.Fatalf("read while not listening = %+v, %v; want the app named %q", acc, err, name)
	}
}

func waitRefused(t *testing.T, s *Store, f accessFixture) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		_, err := f.read(s)
		if errors.Is(err, sinks.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after another node deleted the session the cached store answers %v", err)
		}
	}
}

// TestAccessCacheWithoutTriggers: on a schema before migration 00011 nothing would announce a
// change, so nothing is kept; once migrated, the store listens.
func TestAccessCacheWithoutTriggers(t *testing.T) {
	oldRetry := listenRetry
	listenRetry = 50 * time.Millisecond
	t.Cleanup(func() { listenRetry = oldRetry })
	dsn := migrated(t)
	migrateDown(t, dsn, 10)
	s, err := OpenWith(t.Context(), dsn, Options{AccessCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := newAccessFixture(t, s)
	time.Sleep(300 * time.Millisecond) // several tries
	waitListening(t, s, false)
	if _, err := f.read(s); err != nil {
		t.Fatal(err)
	}
	if s.access.Kept(f.key()) {
		t.Fatal("an answer was kept with no trigger to announce its change")
	}
	if err := Migrate(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	waitListening(t, s, true)
	prime(t, s, f)
}

// TestAccessNotices: what each notice's payload drops (migration 00011's forms).
func TestAccessNotices(t *testing.T) {
	team, other := uuid.New(), uuid.New()
	k := sinks.AccessKey{Session: uuid.New(), App: uuid.New(), User: uuid.New()}
	acc := sinks.SessionAccess{App: model.App{ID: k.App, TeamID: team}, Role: model.RoleOwner}
	cases := []struct {
		payload string
		drops   bool
	}{
		{"s" + k.Session.String(), true},
		{"s" + uuid.NewString(), false},
		{"a" + k.App.String(), true},
		{"a" + uuid.NewString(), false},
		{"m" + team.String() + "/" + k.User.String(), true},
		{"m" + other.String() + "/" + k.User.String(), false},
		{"m" + team.String() + "/" + uuid.NewString(), false},
		{"*", true},
		{"", true},
		{"sgarbage", true},
		{"m" + team.String(), true},
		{"x" + k.App.String(), true},
	}
	for _, c := range cases {
		ac := sinks.NewAccessCache(time.Hour, true)
		if _, err := ac.Read(k, func() (sinks.SessionAccess, error) { return acc, nil }); err != nil {
			t.Fatal(err)
		}
		ac.Drop(matcher(c.payload))
		if ac.Kept(k) == c.drops {
			t.Errorf("notice %q: kept = %v, want %v", c.payload, c.drops, !c.drops)
		}
	}
}

// listenerPID is the backend of the listening connection (the only one).
func listenerPID(t *testing.T, s *Store) int {
	t.Helper()
	var pids []int
	rows, err := s.pool.Query(t.Context(), `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, listenerName)
	if err == nil {
		pids, err = pgx.CollectRows(rows, pgx.RowTo[int])
	}
	if err != nil || len(pids) != 1 {
		t.Fatalf("listener backends %v, %v; want one", pids, err)
	}
	return pids[0]
}
