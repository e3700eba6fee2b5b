package postgres

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/metatest"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// migrated returns a DSN of a fresh database with the schema applied.
func migrated(t *testing.T) string {
	t.Helper()
	dsn := sinktest.Postgres(t)
	if err := Migrate(t.Context(), dsn); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return dsn
}

func openStore(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		metatest.Run(t, func(t *testing.T) sinks.MetaStore { return openStore(t, migrated(t)) })
	})
	// The test server's databases collate as "C"; users' usually follow a locale, where "B"
	// sorts after "a". The byte order the suite asks for must not depend on it.
	t.Run("postgres-icu-en", func(t *testing.T) {
		metatest.Run(t, func(t *testing.T) sinks.MetaStore {
			dsn := localeDB(t)
			if err := Migrate(t.Context(), dsn); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			return openStore(t, dsn)
		})
	})
}

// localeDB creates a database whose default collation is ICU's en-US, next to a fresh one of
// sinktest, and returns its DSN; it is dropped when the test ends.
func localeDB(t *testing.T) string {
	t.Helper()
	base := sinktest.Postgres(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/") + "_icu"
	conn, err := pgx.Connect(t.Context(), base)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	if _, err := conn.Exec(t.Context(), `CREATE DATABASE `+name+
		` TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`); err != nil {
		t.Fatalf("create a database collating as en-US: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("connect to drop %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	icu := u.String()
	// Check the premise: this database does sort "B" after "a".
	c, err := pgx.Connect(t.Context(), icu)
	if err != nil {
		t.Fatalf("connect to %s: %v", name, err)
	}
	defer c.Close(context.WithoutCancel(t.Context()))
	var localeOrder bool
	if err := c.QueryRow(t.Context(), `SELECT 'a'::text < 'B'::text`).Scan(&localeOrder); err != nil {
		t.Fatal(err)
	}
	if !localeOrder {
		t.Fatalf("database %s sorts 'B' before 'a'; want a locale's order", name)
	}
	return icu
}

// migrationVersions returns the version numbers of the embedded migration files.
func migrationVersions(t *testing.T) []int64 {
	t.Helper()
	db, err := openSQL("postgres://unused")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := newProvider(db)
	if err != nil {
		t.Fatalf("newProvider: %v", err)
	}
	var out []int64
	for _, src := range p.ListSources() {
		out = append(out, src.Version)
	}
	if len(out) == 0 {
		t.Fatal("no migrations embedded")
	}
	return out
}

// appliedVersions returns how many times each version is recorded as applied.
func appliedVersions(t *testing.T, s *Store) map[int64]int {
	t.Helper()
	rows, err := s.Pool().Query(t.Context(), `SELECT version_id, count(*) FROM goose_db_version WHERE is_applied AND version_id > 0 GROUP BY version_id`)
	if err != nil {
		t.Fatalf("read goose_db_version: %v", err)
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var v, n int64
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		out[v] = int(n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkAppliedOnce(t *testing.T, s *Store) {
	t.Helper()
	want := migrationVersions(t)
	got := appliedVersions(t, s)
	if len(got) != len(want) {
		t.Errorf("applied versions %v, want each of %v once", got, want)
	}
	for _, v := range want {
		if got[v] != 1 {
			t.Errorf("version %d recorded %d times, want once (all: %v)", v, got[v], got)
		}
	}
}

var tables = []string{"users", "teams", "team_members", "apps", "api_keys", "auth_sessions", "builds", "mappings", "sdk_configs",
	"invites", "threshold_prefs", "short_filters", "chat_apps", "bug_report_statuses", "alerts", "alert_deliveries"}

func checkTables(t *testing.T, s *Store, present bool) {
	t.Helper()
	for _, name := range tables {
		if exists := tableExists(t, s, name); exists != present {
			t.Errorf("table %s exists = %v, want %v", name, exists, present)
		}
	}
}

// tableExists says whether s's database has the table.
func tableExists(t *testing.T, s *Store, table string) bool {
	t.Helper()
	var exists bool
	if err := s.Pool().QueryRow(t.Context(), `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
		t.Fatalf("look up table %s: %v", table, err)
	}
	return exists
}

// migrateDown undoes the migrations of dsn's database down to version (0: all of them).
func migrateDown(t *testing.T, dsn string, version int64) {
	t.Helper()
	db, err := openSQL(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := newProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(t.Context(), version); err != nil {
		t.Fatalf("migrate down to %d: %v", version, err)
	}
}

func TestMigrate(t *testing.T) {
	t.Run("FilesAreNumbered", func(t *testing.T) {
		names, err := fs.Glob(migrations, "migrations/*")
		if err != nil {
			t.Fatal(err)
		}
		versions := migrationVersions(t)
		if len(names) != len(versions) {
			t.Errorf("%d files in migrations/ but goose sees %d migrations: every file must be NNNNN_name.sql", len(names), len(versions))
		}
	})

	t.Run("RerunChangesNothing", func(t *testing.T) {
		dsn := migrated(t)
		s := openStore(t, dsn)
		checkTables(t, s, true)
		checkAppliedOnce(t, s)
		u := model.User{ID: uuid.New(), Name: "Ada", Email: "ada@example.com", CreatedAt: time.Now(), UpdatedAt: time.Now()}
		own := model.Team{ID: uuid.New(), Name: "Ada's team", CreatedAt: u.CreatedAt, UpdatedAt: u.CreatedAt}
		if err := s.CreateUser(t.Context(), u, own); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		for range 2 {
			if err := Migrate(t.Context(), dsn); err != nil {
				t.Fatalf("Migrate again: %v", err)
			}
		}
		checkAppliedOnce(t, s)
		if _, err := s.User(t.Context(), u.ID); err != nil {
			t.Errorf("User after migrating again: %v", err)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		dsn := sinktest.Postgres(t)
		const n = 4
		errs := make(chan error, n)
		for range n {
			go func() { errs <- Migrate(t.Context(), dsn) }()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Errorf("concurrent Migrate: %v", err)
			}
		}
		s := openStore(t, dsn)
		checkTables(t, s, true)
		checkAppliedOnce(t, s)
	})

	t.Run("DownAndUp", func(t *testing.T) {
		dsn := migrated(t)
		migrateDown(t, dsn, 0)
		s := openStore(t, dsn)
		checkTables(t, s, false)
		if err := Migrate(t.Context(), dsn); err != nil {
			t.Fatalf("Migrate after down: %v", err)
		}
		checkTables(t, s, true)
	})

	t.Run("BadDSN", func(t *testing.T) {
		if err := Migrate(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"); err == nil {
			t.Error("Migrate against no server = nil, want an error")
		}
		if _, err := Open(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"); err == nil {
			t.Error("Open against no server = nil, want an error")
		}
	})
}

const thresholdsSQL = `INSERT INTO threshold_prefs (app_id, error_good_threshold, error_caution_threshold,
	error_spike_min_count_threshold, error_spike_min_rate_threshold, updated_at) VALUES ($1, $2, $3, $4, $5, now())`

// TestSchemaConstraints checks that the database itself refuses bad rows, whatever code
// writes them.
func TestSchemaConstraints(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, migrated(t))
	now := time.Now()
	u := model.User{ID: uuid.New(), Name: "Ada", Email: "Ada@Example.com", CreatedAt: now, UpdatedAt: now}
	own := model.Team{ID: uuid.New(), Name: "Ada's team", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateUser(ctx, u, own); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	v := model.User{ID: uuid.New(), Name: "Bob", Email: "bob@example.com", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateUser(ctx, v, model.Team{ID: uuid.New(), Name: "Bob's team", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	app := model.App{ID: uuid.New(), TeamID: own.ID, Name: "app", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateApp(ctx, app, model.APIKey{AppID: app.ID, Key: "key-1", CreatedAt: now}); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	cases := []struct {
		name string
		sql  string
		args []any
		code string
	}{
		{"email unique whatever the case", `INSERT INTO users (id, name, email, own_team_id, created_at, updated_at)
			SELECT $1, 'x', 'ADA@example.COM', $2, now(), now()`, []any{uuid.New(), own.ID}, uniqueViolation},
		{"role is one of four", `INSERT INTO team_members (team_id, user_id, role, created_at, updated_at) VALUES ($1, $2, 'boss', now(), now())`,
			[]any{own.ID, v.ID}, checkViolation},
		{"member of a missing team", `INSERT INTO team_members (team_id, user_id, role, created_at, updated_at) VALUES ($1, $2, 'viewer', now(), now())`,
			[]any{uuid.New(), u.ID}, foreignKeyViolation},
		{"retention below 30", `UPDATE apps SET retention_days = 29 WHERE id = $1`, []any{app.ID}, checkViolation},
		{"retention above 365", `UPDATE apps SET retention_days = 366 WHERE id = $1`, []any{app.ID}, checkViolation},
		{"one active key per app", `INSERT INTO api_keys (key, app_id, created_at) VALUES ('key-2', $1, now())`, []any{app.ID}, uniqueViolation},
		{"key unique", `INSERT INTO api_keys (key, app_id, created_at, revoked) VALUES ('key-1', $1, now(), true)`, []any{app.ID}, uniqueViolation},
		{"key of a missing app", `INSERT INTO api_keys (key, app_id, created_at, revoked) VALUES ('key-3', $1, now(), true)`, []any{uuid.New()}, foreignKeyViolation},
		{"build size not negative", `INSERT INTO builds (app_id, version_name, version_code, build_type, size, updated_at) VALUES ($1, '1', '1', 'apk', -1, now())`,
			[]any{app.ID}, checkViolation},
		{"build type is one of three", `INSERT INTO builds (app_id, version_name, version_code, build_type, size, updated_at) VALUES ($1, '1', '1', 'exe', 1, now())`,
			[]any{app.ID}, checkViolation},
		{"build of a missing app", `INSERT INTO builds (app_id, version_name, version_code, build_type, size, updated_at) VALUES ($1, '1', '1', 'apk', 1, now())`,
			[]any{uuid.New()}, foreignKeyViolation},
		{"mapping type is one of model.MappingTypes", `INSERT INTO mappings (id, app_id, version_name, version_code, build_type, type, filename, blob_key, created_at)
			VALUES ($1, $2, '1', '1', 'apk', 'pdb', 'f', 'k', now())`, []any{uuid.New(), app.ID}, checkViolation},
		{"mapping of a missing app", `INSERT INTO mappings (id, app_id, version_name, version_code, build_type, type, filename, blob_key, created_at)
			VALUES ($1, $2, '1', '1', 'apk', 'dsym', 'f', 'k', now())`, []any{uuid.New(), uuid.New()}, foreignKeyViolation},
		{"config of a missing app", `INSERT INTO sdk_configs (app_id, config, updated_at) VALUES ($1, '{}', now())`, []any{uuid.New()}, foreignKeyViolation},
		{"session of a missing user", `INSERT INTO auth_sessions (id, user_id, refresh_id, created_at, expires_at) VALUES ($1, $2, $1, now(), now())`,
			[]any{uuid.New(), uuid.New()}, foreignKeyViolation},
		{"invite role is one of four", `INSERT INTO invites (id, team_id, email, role, invited_by, created_at, updated_at, expires_at)
			VALUES ($1, $2, 'a@example.com', 'boss', $3, now(), now(), now())`, []any{uuid.New(), own.ID, u.ID}, checkViolation},
		{"invite email not empty", `INSERT INTO invites (id, team_id, email, role, invited_by, created_at, updated_at, expires_at)
			VALUES ($1, $2, '', 'viewer', $3, now(), now(), now())`, []any{uuid.New(), own.ID, u.ID}, checkViolation},
		{"invite to a missing team", `INSERT INTO invites (id, team_id, email, role, invited_by, created_at, updated_at, expires_at)
			VALUES ($1, $2, 'a@example.com', 'viewer', $3, now(), now(), now())`, []any{uuid.New(), uuid.New(), u.ID}, foreignKeyViolation},
		{"invite by a missing user", `INSERT INTO invites (id, team_id, email, role, invited_by, created_at, updated_at, expires_at)
			VALUES ($1, $2, 'a@example.com', 'viewer', $3, now(), now(), now())`, []any{uuid.New(), own.ID, uuid.New()}, foreignKeyViolation},
		{"good threshold at most 100", thresholdsSQL, []any{app.ID, 100.5, 50.0, 1, 1.0}, checkViolation},
		{"caution threshold not negative", thresholdsSQL, []any{app.ID, 90.0, -1.0, 1, 1.0}, checkViolation},
		{"caution threshold at most good", thresholdsSQL, []any{app.ID, 80.0, 81.0, 1, 1.0}, checkViolation},
		{"threshold not NaN", thresholdsSQL, []any{app.ID, math.NaN(), 50.0, 1, 1.0}, checkViolation},
		{"spike minimum count not negative", thresholdsSQL, []any{app.ID, 90.0, 80.0, -1, 1.0}, checkViolation},
		{"spike minimum rate at most 100", thresholdsSQL, []any{app.ID, 90.0, 80.0, 1, 100.1}, checkViolation},
		{"thresholds of a missing app", thresholdsSQL, []any{uuid.New(), 90.0, 80.0, 1, 1.0}, foreignKeyViolation},
		{"short filter code is hex MD5", `INSERT INTO short_filters (app_id, code, filters, created_at) VALUES ($1, 'ABCDEF0123456789ABCDEF0123456789', '{}', now())`,
			[]any{app.ID}, checkViolation},
		{"short filters are an object", `INSERT INTO short_filters (app_id, code, filters, created_at) VALUES ($1, '0123456789abcdef0123456789abcdef', '[]', now())`,
			[]any{app.ID}, checkViolation},
		{"short filter of a missing app", `INSERT INTO short_filters (app_id, code, filters, created_at) VALUES ($1, '0123456789abcdef0123456789abcdef', '{}', now())`,
			[]any{uuid.New()}, foreignKeyViolation},
		{"webhook is http(s)", `INSERT INTO chat_apps (team_id, webhook_url, enabled, updated_at) VALUES ($1, 'ftp://x/', true, now())`,
			[]any{own.ID}, checkViolation},
		{"webhook has a host", `INSERT INTO chat_apps (team_id, webhook_url, enabled, updated_at) VALUES ($1, 'https:///x', true, now())`,
			[]any{own.ID}, checkViolation},
		{"chat app of a missing team", `INSERT INTO chat_apps (team_id, webhook_url, enabled, updated_at) VALUES ($1, 'https://x/', true, now())`,
			[]any{uuid.New()}, foreignKeyViolation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Pool().Exec(ctx, tc.sql, tc.args...)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != tc.code {
				t.Errorf("got %v, want SQLSTATE %s", err, tc.code)
			}
		})
	}

	t.Run("mapping types match the model", func(t *testing.T) {
		for typ := range model.MappingTypes {
			id := uuid.New()
			_, err := s.Pool().Exec(ctx, `INSERT INTO mappings (id, app_id, version_name, version_code, build_type, type, filename, blob_key, created_at)
				VALUES ($1, $2, 'types', '1', 'apk', $3, 'f', 'k', now())`, id, app.ID, typ)
			if err != nil {
				t.Errorf("mapping type %q refused: %v", typ, err)
			}
		}
	})

	t.Run("deleting a team deletes its invites and chat app", func(t *testing.T) {
		doomed := model.Team{ID: uuid.New(), Name: "doomed", CreatedAt: now, UpdatedAt: now}
		if err := s.CreateTeam(ctx, doomed, u.ID); err != nil {
			t.Fatalf("CreateTeam: %v", err)
		}
		inv := model.Invite{ID: uuid.New(), TeamID: doomed.ID, Email: "x@example.com", Role: model.RoleViewer, InvitedBy: u.ID, CreatedAt: now, UpdatedAt: now, ExpiresAt: now}
		if err := s.CreateInvites(ctx, []model.Invite{inv}); err != nil {
			t.Fatalf("CreateInvites: %v", err)
		}
		if err := s.SetChatApp(ctx, model.ChatApp{TeamID: doomed.ID, WebhookURL: "https://hooks.example/", UpdatedAt: now}); err != nil {
			t.Fatalf("SetChatApp: %v", err)
		}
		if _, err := s.Pool().Exec(ctx, `DELETE FROM teams WHERE id = $1`, doomed.ID); err != nil {
			t.Fatalf("delete team: %v", err)
		}
		for _, table := range []string{"invites", "chat_apps"} {
			var n int
			if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE team_id = $1`, doomed.ID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d rows of the deleted team left in %s", n, table)
			}
		}
	})

	// The index on invite emails serves AcceptInvites only while both use one expression.
	t.Run("AcceptInvites can use the email index", func(t *testing.T) {
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // only read
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, `EXPLAIN SELECT 1 FROM invites WHERE `+emailMatch+` AND expires_at > $2`, "a@example.com", now)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(plan, "\n"), "invites_email_lower_idx") {
			t.Errorf("plan of the AcceptInvites match does not use invites_email_lower_idx:\n%s", strings.Join(plan, "\n"))
		}
	})

	t.Run("deleting an app deletes its builds, mappings, config, thresholds and short filters", func(t *testing.T) {
		doomed := model.App{ID: uuid.New(), TeamID: own.ID, Name: "doomed", CreatedAt: now, UpdatedAt: now}
		if err := s.CreateApp(ctx, doomed, model.APIKey{AppID: doomed.ID, Key: "key-doomed", CreatedAt: now}); err != nil {
			t.Fatalf("CreateApp: %v", err)
		}
		if err := s.PutBuild(ctx, model.Build{AppID: doomed.ID, VersionName: "1", VersionCode: "1", BuildType: "apk", Size: 1, UpdatedAt: now}); err != nil {
			t.Fatalf("PutBuild: %v", err)
		}
		m := model.Mapping{ID: uuid.New(), AppID: doomed.ID, VersionName: "1", VersionCode: "1", BuildType: "apk", Type: "proguard", Filename: "f", BlobKey: "k", CreatedAt: now}
		if err := s.AddMappings(ctx, []model.Mapping{m}); err != nil {
			t.Fatalf("AddMappings: %v", err)
		}
		if err := s.SetSDKConfig(ctx, doomed.ID, model.DefaultSDKConfig(), now); err != nil {
			t.Fatalf("SetSDKConfig: %v", err)
		}
		if err := s.SetThresholdPrefs(ctx, doomed.ID, model.DefaultThresholdPrefs(), now); err != nil {
			t.Fatalf("SetThresholdPrefs: %v", err)
		}
		if err := s.PutShortFilter(ctx, model.ShortFilter{Code: "0123456789abcdef0123456789abcdef", AppID: doomed.ID, Filters: []byte(`{}`), CreatedAt: now}); err != nil {
			t.Fatalf("PutShortFilter: %v", err)
		}
		if _, err := s.Pool().Exec(ctx, `DELETE FROM apps WHERE id = $1`, doomed.ID); err != nil {
			t.Fatalf("delete app: %v", err)
		}
		for _, table := range []string{"builds", "mappings", "sdk_configs", "threshold_prefs", "short_filters"} {
			var n int
			if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE app_id = $1`, doomed.ID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d rows of the deleted app left in %s", n, table)
			}
		}
	})

	t.Run("retention defaults to 30", func(t *testing.T) {
		id := uuid.New()
		if _, err := s.Pool().Exec(ctx, `INSERT INTO apps (id, team_id, name, created_at, updated_at) VALUES ($1, $2, 'x', now(), now())`, id, own.ID); err != nil {
			t.Fatal(err)
		}
		a, err := s.App(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.RetentionDays != model.DefaultRetentionDays {
			t.Errorf("retention_days default = %d, want %d", a.RetentionDays, model.DefaultRetentionDays)
		}
	})

	t.Run("error mapping keeps the cause", func(t *testing.T) {
		err := s.CreateUser(ctx, model.User{ID: uuid.New(), Email: strings.ToUpper(u.Email)}, model.Team{ID: uuid.New()})
		var pgErr *pgconn.PgError
		if !errors.Is(err, sinks.ErrConflict) || !errors.As(err, &pgErr) || pgErr.ConstraintName != "users_email_lower_key" {
			t.Errorf("CreateUser with a taken email: %v, want ErrConflict wrapping the violation of users_email_lower_key", err)
		}
	})

	t.Run("cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.User(cctx, u.ID); !errors.Is(err, context.Canceled) {
			t.Errorf("User with a cancelled context: %v, want context.Canceled", err)
		}
	})
}

func BenchmarkMeta(b *testing.B) {
	dsn := sinktest.Postgres(b)
	if err := Migrate(b.Context(), dsn); err != nil {
		b.Fatalf("Migrate: %v", err)
	}
	s, err := Open(b.Context(), dsn)
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	defer s.Close()
	metatest.Bench(b, s)
}

// TestCallTimeout: a call that the server does not answer (here: it waits for a row lock held
// by another connection, as it would behind a frozen server) ends after CallTimeout with
// ErrUnavailable of the metadata store, and its message is for logs only.
func TestCallTimeout(t *testing.T) {
	dsn := migrated(t)
	s, err := OpenWith(t.Context(), dsn, Options{CallTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("OpenWith: %v", err)
	}
	defer s.Close()
	c0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	u := model.User{ID: uuid.New(), Name: "U", Email: uuid.NewString() + "@example.com", CreatedAt: c0, UpdatedAt: c0}
	tm := model.Team{ID: uuid.New(), Name: "T", CreatedAt: c0, UpdatedAt: c0}
	if err := s.CreateUser(t.Context(), u, tm); err != nil {
		t.Fatal(err)
	}
	app := model.App{ID: uuid.New(), TeamID: tm.ID, Name: "A", UniqueID: "x", Platform: "android", CreatedAt: c0, UpdatedAt: c0}
	if err := s.CreateApp(t.Context(), app, model.APIKey{AppID: app.ID, Key: "k_" + uuid.NewString(), CreatedAt: c0}); err != nil {
		t.Fatal(err)
	}
	locker, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(context.Background())
	tx, err := locker.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	if _, err := tx.Exec(t.Context(), `LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = s.AppByAPIKey(t.Context(), "k_missing")
	took := time.Since(start)
	if !errors.Is(err, sinks.ErrUnavailable) || errors.Is(err, sinks.ErrNotFound) {
		t.Fatalf("AppByAPIKey behind a lock: %v, want ErrUnavailable", err)
	}
	if took > 3*time.Second {
		t.Fatalf("AppByAPIKey took %v with a 500ms CallTimeout", took)
	}
	_ = tx.Rollback(t.Context())
	if _, _, err := s.AppByAPIKey(t.Context(), "k_missing"); !errors.Is(err, sinks.ErrNotFound) {
		t.Fatalf("AppByAPIKey after the lock: %v, want ErrNotFound", err)
	}
}
