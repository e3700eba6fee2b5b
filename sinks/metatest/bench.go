package metatest

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Bench measures the MetaStore calls on the ingest path: looking up an app by its API key,
// recording that the key was used, and the writes of PUT /builds and the read of GET /config;
// and the dashboard's writes of invites, accepting them at sign-up, and short filters.
// Metadata is not hot (the HTTP layer caches keys; builds come once per release), so these
// numbers are for spotting regressions, not for tuning.
func Bench(b *testing.B, s sinks.MetaStore) {
	ctx := b.Context()
	u, tm := newUser(at(0))
	if err := s.CreateUser(ctx, u, tm); err != nil {
		b.Fatalf("CreateUser: %v", err)
	}
	a, k := newApp(tm.ID, at(1))
	if err := s.CreateApp(ctx, a, k); err != nil {
		b.Fatalf("CreateApp: %v", err)
	}
	b.Run("AppByAPIKey", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := s.AppByAPIKey(ctx, k.Key); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("TouchAPIKey", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if err := s.TouchAPIKey(ctx, k.Key, at(2).Add(time.Duration(i)*time.Microsecond)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutBuild", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			// Every fourth put replaces a build, as repeated uploads of one release do.
			if err := s.PutBuild(ctx, newBuild(a.ID, "1."+strconv.Itoa(i-i%4), "1", "aab", int64(i), at(3))); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	const batch = 10 // mapping files of one build: dSYMs of an app and its frameworks
	b.Run("AddMappings", func(b *testing.B) {
		b.ReportAllocs()
		ms := make([]model.Mapping, batch)
		i := 0
		for b.Loop() {
			i++
			for j := range ms {
				ms[j] = newMapping(a.ID, "2."+strconv.Itoa(i), "1", at(4))
			}
			if err := s.AddMappings(ctx, ms); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
	})
	cfg, _ := fullConfigs()
	b.Run("SetSDKConfig", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if err := s.SetSDKConfig(ctx, a.ID, cfg, at(5).Add(time.Duration(i)*time.Microsecond)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SDKConfig", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := s.SDKConfig(ctx, a.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	const invites = 10 // one invitation form sent to several people
	b.Run("CreateInvites", func(b *testing.B) {
		b.ReportAllocs()
		invs := make([]model.Invite, invites)
		for b.Loop() {
			for j := range invs {
				invs[j] = newInvite(tm.ID, u.ID, newEmail(), model.RoleDeveloper, at(6))
			}
			if err := s.CreateInvites(ctx, invs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*invites)/b.Elapsed().Seconds(), "rows/s")
	})
	// AcceptInvites of a new user invited twice to a new team; only the accept is timed.
	b.Run("AcceptInvites", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			team := model.Team{ID: uuid.New(), Name: "bench", CreatedAt: at(7), UpdatedAt: at(7)}
			if err := s.CreateTeam(ctx, team, u.ID); err != nil {
				b.Fatal(err)
			}
			v, own := newUser(at(7))
			if err := s.CreateUser(ctx, v, own); err != nil {
				b.Fatal(err)
			}
			err := s.CreateInvites(ctx, []model.Invite{
				newInvite(team.ID, u.ID, v.Email, model.RoleViewer, at(7)),
				newInvite(team.ID, u.ID, v.Email, model.RoleAdmin, at(7)),
			})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			created, err := s.AcceptInvites(ctx, v.Email, v.ID, at(8))
			if err != nil || len(created) != 1 {
				b.Fatalf("AcceptInvites = %+v, %v; want one membership", created, err)
			}
		}
	})
	b.Run("PutShortFilter", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			// Every fourth put repeats a code, as two people sharing one dashboard view do.
			f := newShortFilter(a.ID, `{"versions":["1.`+strconv.Itoa(i-i%4)+`"],"from":"2024-03-01T00:00:00Z"}`, at(9))
			if err := s.PutShortFilter(ctx, f); err != nil {
				b.Fatal(err)
			}
		}
	})
}
