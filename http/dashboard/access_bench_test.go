package dashboard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/actors/actorpb"
	"github.com/svc-dev/svc/http/auth"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
	"github.com/svc-dev/svc/sinks/badgerdb"
	"github.com/svc-dev/svc/sinks/badgermeta"
	"github.com/svc-dev/svc/sinks/postgres"
	"github.com/svc-dev/svc/sinks/sinktest"
)

// BenchmarkAppRoute times GET /apps/{id}/crashGroups answered live, over loopback HTTP as make
// bench's live rows are: the sign-in checks against the metadata store, routing, the handler
// and the JSON answer. The app actor is a stub that answers at once with no groups, so what is
// left is the cost every live answer pays besides the actor. "postgres-cached" is a node's
// PostgreSQL store, whose access cache keeps the sign-in check's answer. "postgres" needs a server:
//
//	go run ./cmd/testenv -only postgres -- go test -run '^$' -bench AppRoute ./http/dashboard/
func BenchmarkAppRoute(b *testing.B) {
	b.Run("embedded", func(b *testing.B) {
		db, err := badgerdb.Open("", nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		benchAppRoute(b, badgermeta.New(db))
	})
	for _, cached := range []bool{false, true} {
		name := "postgres"
		if cached {
			name = "postgres-cached"
		}
		b.Run(name, func(b *testing.B) {
			dsn := sinktest.Postgres(b)
			if err := postgres.Migrate(b.Context(), dsn); err != nil {
				b.Fatalf("Migrate: %v", err)
			}
			s, err := postgres.OpenWith(b.Context(), dsn, postgres.Options{AccessCache: cached})
			if err != nil {
				b.Fatalf("Open: %v", err)
			}
			defer s.Close()
			for deadline := time.Now().Add(10 * time.Second); cached && !s.AccessCacheListening(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					b.Fatal("the access cache does not listen")
				}
			}
			benchAppRoute(b, s)
		})
	}
}

// instantLive answers every live query at once, with nothing in it.
type instantLive struct{}

func (instantLive) Query(context.Context, uuid.UUID, *actorpb.LiveQuery) (*actorpb.LiveReply, error) {
	return &actorpb.LiveReply{Ok: true}, nil
}

func benchAppRoute(b *testing.B, meta sinks.MetaStore) {
	ctx := b.Context()
	now := time.Now().UTC()
	api := &API{Meta: meta, Live: instantLive{}, RatePerUser: 1 << 30, RateSignInIP: 1 << 30,
		Tokens: &auth.Issuer{AccessSecret: []byte("access-secret-0123456789"), RefreshSecret: []byte("refresh-secret-0123456789"),
			AccessTTL: 30 * time.Minute, RefreshTTL: 7 * 24 * time.Hour}}
	u := model.User{ID: uuid.New(), Name: "Ada", Email: "ada@example.com", CreatedAt: now, UpdatedAt: now}
	team := model.Team{ID: uuid.New(), Name: "Ada's team", CreatedAt: now, UpdatedAt: now}
	if err := meta.CreateUser(ctx, u, team); err != nil {
		b.Fatal(err)
	}
	app := model.App{ID: uuid.New(), TeamID: team.ID, Name: "app", RetentionDays: 30, CreatedAt: now, UpdatedAt: now}
	if err := meta.CreateApp(ctx, app, model.APIKey{AppID: app.ID, Key: model.NewAPIKey(), CreatedAt: now}); err != nil {
		b.Fatal(err)
	}
	s := model.AuthSession{ID: uuid.New(), UserID: u.ID, RefreshID: uuid.New(), CreatedAt: now}
	tokens, err := api.Tokens.Issue(u.ID, s.ID, s.RefreshID)
	if err != nil {
		b.Fatal(err)
	}
	s.ExpiresAt = tokens.RefreshExpiresAt
	if err := meta.CreateAuthSession(ctx, s); err != nil {
		b.Fatal(err)
	}
	r := chi.NewRouter()
	api.Routes(r)
	srv := httptest.NewServer(r)
	defer srv.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/apps/"+app.ID.String()+"/crashGroups", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tokens.AccessToken)
	client := srv.Client()
	b.ReportAllocs()
	var took []time.Duration
	for b.Loop() {
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took = append(took, time.Since(t0))
		if resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderAnsweredBy) != "live" {
			b.Fatalf("GET crashGroups: %s, answered by %q", resp.Status, resp.Header.Get(HeaderAnsweredBy))
		}
	}
	// The target is a percentile (live answers < 1 ms p99), so report them beside the mean.
	slices.Sort(took)
	for _, p := range []float64{0.50, 0.99} {
		b.ReportMetric(float64(took[int(p*float64(len(took)-1))].Microseconds()), fmt.Sprintf("p%02.0f-µs", p*100))
	}
}
