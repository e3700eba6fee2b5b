package postgres

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/svc-dev/svc/model"
)

const (
	extrasSQL = `INSERT INTO sdk_config_extras (app_id, http_sampling_rate, profile_sampling_rate, log_autocollect_enabled,
		log_min_severity, log_ignore_patterns, updated_at) VALUES ($1, $2, $3, true, $4, '{}', now())`
	notifPrefsSQL = `INSERT INTO notif_prefs (user_id, error_spike, app_hang_spike, bug_report, daily_summary, created_at, updated_at)
		VALUES ($1, true, true, true, true, $2, $3)`
)

// TestSettingsSchema checks the tables of migrations 00006 (sdk_config_extras) and 00007
// (notif_prefs): the database refuses bad rows whatever code writes them, rows go with their app
// or user, and the migrations go down and up again.
func TestSettingsSchema(t *testing.T) {
	ctx := t.Context()
	dsn := migrated(t)
	s := openStore(t, dsn)
	now := time.Now()
	u := model.User{ID: uuid.New(), Name: "Ada", Email: "ada@example.com", CreatedAt: now, UpdatedAt: now}
	own := model.Team{ID: uuid.New(), Name: "Ada's team", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateUser(ctx, u, own); err != nil {
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
		{"HTTP rate at most 100", extrasSQL, []any{app.ID, 100.5, 1.0, 16}, checkViolation},
		{"profile rate not negative", extrasSQL, []any{app.ID, 1.0, -1.0, 16}, checkViolation},
		{"rate not NaN", extrasSQL, []any{app.ID, math.NaN(), 1.0, 16}, checkViolation},
		{"severity is one of five", extrasSQL, []any{app.ID, 1.0, 1.0, 15}, checkViolation},
		{"extra settings of a missing app", extrasSQL, []any{uuid.New(), 1.0, 1.0, 16}, foreignKeyViolation},
		{"preferences last set before first set", notifPrefsSQL, []any{u.ID, now, now.Add(-time.Second)}, checkViolation},
		{"preferences of a missing user", notifPrefsSQL, []any{uuid.New(), now, now}, foreignKeyViolation},
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
	t.Run("every severity of the model is accepted", func(t *testing.T) {
		for sev := range model.LogSeverities {
			if _, err := s.Pool().Exec(ctx, extrasSQL+` ON CONFLICT (app_id) DO NOTHING`, app.ID, 1.0, 1.0, sev); err != nil {
				t.Errorf("severity %d refused: %v", sev, err)
			}
			if _, err := s.Pool().Exec(ctx, `DELETE FROM sdk_config_extras WHERE app_id = $1`, app.ID); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("rows go with their app and user", func(t *testing.T) {
		if err := s.SetSDKConfigExtra(ctx, app.ID, model.DefaultSDKConfigExtra(), now); err != nil {
			t.Fatalf("SetSDKConfigExtra: %v", err)
		}
		p := model.DefaultNotifPrefs()
		p.CreatedAt, p.UpdatedAt = now, now
		if err := s.SetNotifPrefs(ctx, u.ID, p); err != nil {
			t.Fatalf("SetNotifPrefs: %v", err)
		}
		for _, c := range []struct {
			id        uuid.UUID
			del, left string
		}{
			{app.ID, `DELETE FROM apps WHERE id = $1`, `SELECT count(*) FROM sdk_config_extras WHERE app_id = $1`},
			{u.ID, `DELETE FROM users WHERE id = $1`, `SELECT count(*) FROM notif_prefs WHERE user_id = $1`},
		} {
			if _, err := s.Pool().Exec(ctx, c.del, c.id); err != nil {
				t.Fatalf("%s: %v", c.del, err)
			}
			var n int
			if err := s.Pool().QueryRow(ctx, c.left, c.id).Scan(&n); err != nil || n != 0 {
				t.Errorf("%s after %s: %d (%v), want 0", c.left, c.del, n, err)
			}
		}
	})

	t.Run("down and up", func(t *testing.T) {
		exists := func(table string) bool { return tableExists(t, s, table) }
		migrateDown(t, dsn, 5)
		for _, table := range []string{"sdk_config_extras", "notif_prefs"} {
			if exists(table) {
				t.Errorf("table %s exists after going down to 00005", table)
			}
		}
		if !exists("alerts") {
			t.Error("going down to 00005 dropped the alerts of 00005")
		}
		if err := Migrate(ctx, dsn); err != nil {
			t.Fatalf("Migrate after down: %v", err)
		}
		for _, table := range []string{"sdk_config_extras", "notif_prefs"} {
			if !exists(table) {
				t.Errorf("table %s missing after migrating up again", table)
			}
		}
	})
}
