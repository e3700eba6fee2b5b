// Package metatest is the one conformance suite for sinks.MetaStore. Every backend's test calls
// Run inside a subtest named after the backend, so `go test -v` shows which backend failed:
//
//	t.Run("badger", func(t *testing.T) { metatest.Run(t, open) })
//
// Each group of subtests gets a store of its own from open; within a group every test uses
// fresh ids and emails, so they do not see each other's rows.
//
// Beyond the interface's doc comments the suite pins down these choices, so that every backend
// behaves alike:
//   - a membership created with a team (CreateUser, CreateTeam) has the team's CreatedAt as its
//     CreatedAt and UpdatedAt;
//   - list methods (TeamsOfUser, Members, AppsOfTeam) return ErrNotFound for an unknown user or
//     team and an empty list for a known one without rows; lists break ties of equal times by id;
//   - a reference to a missing user, team or app (CreateTeam, AddMember, CreateApp,
//     RotateAPIKey, CreateAuthSession) is ErrNotFound; methods that change or delete a row by id
//     return ErrNotFound when it is missing, DeleteAuthSession included;
//   - CreateApp stores RetentionDays 0 as model.DefaultRetentionDays; any other value outside
//     30..365 (in CreateApp or UpdateApp) is ErrInvalid;
//   - CreateApp and RotateAPIKey refuse with ErrInvalid a key that is empty, revoked, or whose
//     AppID is not the app's;
//   - RotateAuthSession of an unknown session is ErrNotFound (ErrConflict is for a stale
//     refresh id);
//   - DeleteExpiredAuthSessions keeps a session whose ExpiresAt equals now;
//   - PutBuild, AddMappings and SetSDKConfig of an unknown app, and Builds, Mappings and
//     SDKConfig of one, are ErrNotFound; Builds and Mappings of a known app without rows are
//     empty;
//   - Builds breaks ties of equal UpdatedAt by version name, version code, then build type, in
//     byte order; Mappings filters on version name and code only (every build type), ties by id;
//   - a PutBuild with an earlier UpdatedAt still replaces the stored build;
//   - ErrInvalid for: a negative build size; a build type outside model.BuildTypes or a mapping
//     type outside model.MappingTypes; a mapping's BlobKey that sinks.CheckBlobKey refuses; an
//     SDK configuration that model.SDKConfig.Validate refuses; and a NUL byte or invalid UTF-8 in
//     any string of a build, mapping or configuration (Postgres text and jsonb cannot hold them,
//     and JSON would not give them back as written) or in the version arguments of Mappings;
//   - AddMappings of an empty batch stores nothing and succeeds;
//   - SetSDKConfig stores nil lists as empty ones; SDKConfig returns every list non-nil;
//   - AllApps returns an empty list for a store without apps; ties of equal CreatedAt by id;
//   - CreateInvites of an unknown team or inviting user (InvitedBy) is ErrNotFound, an id taken
//     or repeated in the batch ErrConflict, a role other than the four, an empty email, or a
//     NUL byte or invalid UTF-8 in the email ErrInvalid; an empty batch stores nothing and
//     succeeds. One email may have several invites, to one team or more;
//   - Invites of an unknown team is ErrNotFound, of a known one without invites empty; ties of
//     equal CreatedAt by id; UpdateInvite of an unknown role is ErrInvalid;
//   - AcceptInvites compares emails with A–Z lowered and nothing else (é and É differ): Postgres's
//     lower() follows the database's locale and Go's strings.ToLower Unicode, so only ASCII
//     folding lets every backend agree on every address. An invite is accepted when it has not
//     expired at now (model.Invite.Expired); expired invites are left in place. Of several
//     invites to one team the highest role wins; a team the user is in already keeps the
//     user's role, and its invites are deleted too. Memberships are created with CreatedAt and
//     UpdatedAt now and returned ordered by team id (byte order); none is an empty list. An
//     unknown user is ErrNotFound, a NUL byte or invalid UTF-8 in the email ErrInvalid;
//   - ThresholdPrefs and ShortFilter of an unknown app, and ChatApp of an unknown team, are
//     ErrNotFound like those never set;
//   - SetThresholdPrefs refuses with ErrInvalid: a threshold outside 0..100 (NaN included), a
//     caution threshold above the good one, a negative minimum count, a minimum rate outside
//     0..100;
//   - a short filter's code is 32 lowercase hex digits (an MD5 sum) and its filters one JSON
//     object in UTF-8; anything else is ErrInvalid in PutShortFilter and ErrNotFound in
//     ShortFilter. Filters come back byte for byte as put, so the code stays their MD5; putting
//     a stored code again with the same bytes changes nothing (CreatedAt included), with other
//     bytes is ErrConflict. Codes are per app;
//   - a chat app's webhook URL is an absolute http or https URL with a host, UTF-8 without NUL,
//     stored as written; anything else is ErrInvalid.
package metatest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// Run runs every conformance test against stores made by open. open must return a ready
// store with no rows and arrange its own cleanup (t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) sinks.MetaStore) {
	groups := []struct {
		name string
		test func(t *testing.T, s sinks.MetaStore)
	}{
		{"Users", testUsers},
		{"Teams", testTeams},
		{"Members", testMembers},
		{"LastOwner", testLastOwner},
		{"Apps", testApps},
		{"APIKeys", testAPIKeys},
		{"AuthSessions", testAuthSessions},
		{"AppAccess", testAppAccess},
		{"ExpiredAuthSessions", testExpiredAuthSessions},
		{"Builds", testBuilds},
		{"Mappings", testMappings},
		{"BuildFiles", testBuildFiles},
		{"SDKConfig", testSDKConfig},
		{"AllApps", testAllApps},
		{"Invites", testInvites},
		{"ThresholdPrefs", testThresholdPrefs},
		{"ShortFilters", testShortFilters},
		{"ChatApps", testChatApps},
		{"DeleteChatApp", testDeleteChatApp},
		{"SDKConfigExtra", testSDKConfigExtra},
		{"NotifPrefs", testNotifPrefs},
		{"Onboarding", testOnboarding},
		{"Alerts", testAlerts},
		{"AlertDeliveries", testAlertDeliveries},
		{"Times", testTimes},
		{"NotFound", testNotFound},
		{"Concurrency", testConcurrency},
		{"Deadline", testDeadline},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			s := open(t)
			if err := s.Ping(t.Context()); err != nil {
				t.Fatalf("Ping of a fresh store: %v", err)
			}
			g.test(t, s)
		})
	}
}

// base is in a zone other than UTC so that a backend returning the caller's zone fails; it has
// microsecond precision, which every backend keeps exactly.
var base = time.Date(2024, 3, 10, 12, 0, 0, 0, time.FixedZone("UTC+2", 2*60*60)).Add(123456 * time.Microsecond)

// at returns base plus i minutes.
func at(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }

// newUser returns a user with a fresh id and email, and their own team, both created at c.
func newUser(c time.Time) (model.User, model.Team) {
	id := uuid.New()
	u := model.User{
		ID:          id,
		Name:        "User " + id.String()[:8],
		Email:       "User." + id.String() + "@Example.com",
		ConfirmedAt: c.Add(time.Second),
		CreatedAt:   c,
		UpdatedAt:   c,
	}
	return u, model.Team{ID: uuid.New(), Name: u.Name + "'s team", CreatedAt: c, UpdatedAt: c}
}

// mustUser stores a new user created at c and returns them with their own team.
func mustUser(t *testing.T, s sinks.MetaStore, c time.Time) (model.User, model.Team) {
	t.Helper()
	u, tm := newUser(c)
	if err := s.CreateUser(t.Context(), u, tm); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	return u, tm
}

// mustTeam stores a new team created at c and owned by owner.
func mustTeam(t *testing.T, s sinks.MetaStore, c time.Time, owner uuid.UUID) model.Team {
	t.Helper()
	tm := model.Team{ID: uuid.New(), Name: "Team " + uuid.NewString()[:8], CreatedAt: c, UpdatedAt: c}
	if err := s.CreateTeam(t.Context(), tm, owner); err != nil {
		t.Fatalf("CreateTeam: %v", err)
	}
	return tm
}

// mustMember adds a new user to team with role, as a membership created at c.
func mustMember(t *testing.T, s sinks.MetaStore, team uuid.UUID, role model.Role, c time.Time) model.Member {
	t.Helper()
	u, _ := mustUser(t, s, c)
	m := model.Member{TeamID: team, UserID: u.ID, Role: role, CreatedAt: c, UpdatedAt: c}
	if err := s.AddMember(t.Context(), m); err != nil {
		t.Fatalf("AddMember(%s): %v", role, err)
	}
	return m
}

// newApp returns an app of team created at c with a fresh first key.
func newApp(team uuid.UUID, c time.Time) (model.App, model.APIKey) {
	a := model.App{
		ID:            uuid.New(),
		TeamID:        team,
		Name:          "App " + uuid.NewString()[:8],
		RetentionDays: 90,
		CreatedAt:     c,
		UpdatedAt:     c,
	}
	return a, newKey(a.ID, c)
}

func newKey(app uuid.UUID, c time.Time) model.APIKey {
	return model.APIKey{AppID: app, Key: "msrsh_" + strings.ReplaceAll(uuid.NewString(), "-", ""), CreatedAt: c}
}

// mustApp stores a new app of team with its first key.
func mustApp(t *testing.T, s sinks.MetaStore, team uuid.UUID, c time.Time) (model.App, model.APIKey) {
	t.Helper()
	a, k := newApp(team, c)
	if err := s.CreateApp(t.Context(), a, k); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	return a, k
}

// check fails the test when got differs from want. Times must be the same instant and in UTC
// (Location() == time.UTC); everything else must be equal.
func check(t *testing.T, what string, got, want any) {
	t.Helper()
	var diffs []string
	walk(reflect.ValueOf(got), reflect.ValueOf(want), what, &diffs)
	if len(diffs) > 0 {
		t.Errorf("%s", strings.Join(diffs, "\n"))
	}
}

var timeType = reflect.TypeFor[time.Time]()

func walk(g, w reflect.Value, path string, diffs *[]string) {
	if g.Type() != w.Type() {
		*diffs = append(*diffs, fmt.Sprintf("%s: got a %s, want a %s", path, g.Type(), w.Type()))
		return
	}
	switch {
	case g.Type() == timeType:
		gt, wt := g.Interface().(time.Time), w.Interface().(time.Time)
		if !gt.Equal(wt) {
			*diffs = append(*diffs, fmt.Sprintf("%s = %s, want %s", path, gt.Format(time.RFC3339Nano), wt.UTC().Format(time.RFC3339Nano)))
		}
		if gt.Location() != time.UTC {
			*diffs = append(*diffs, fmt.Sprintf("%s is in zone %q, want UTC", path, gt.Location()))
		}
	case g.Kind() == reflect.Struct:
		for i := range g.NumField() {
			walk(g.Field(i), w.Field(i), path+"."+g.Type().Field(i).Name, diffs)
		}
	case g.Kind() == reflect.Slice:
		if g.Len() != w.Len() {
			*diffs = append(*diffs, fmt.Sprintf("%s has %d items, want %d: got %+v, want %+v", path, g.Len(), w.Len(), g.Interface(), w.Interface()))
			return
		}
		for i := range g.Len() {
			walk(g.Index(i), w.Index(i), fmt.Sprintf("%s[%d]", path, i), diffs)
		}
	default:
		if !reflect.DeepEqual(g.Interface(), w.Interface()) {
			*diffs = append(*diffs, fmt.Sprintf("%s = %v, want %v", path, g.Interface(), w.Interface()))
		}
	}
}

// as returns s as T, one of the optional interfaces of the metadata stores, failing the test
// when it is not one.
func as[T any](t *testing.T, s sinks.MetaStore) T {
	t.Helper()
	v, ok := s.(T)
	if !ok {
		t.Fatalf("%T does not implement %s", s, reflect.TypeFor[T]())
	}
	return v
}

// wantErr fails the test unless errors.Is(err, want); want nil means no error.
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Errorf("%s: unexpected error %v", what, err)
	case want != nil && !isErr(err, want):
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

func isErr(err, target error) bool { return errors.Is(err, target) }

// race runs fn(i) for i in [0,n) in n goroutines released together and returns their errors.
// It returns only when all have finished.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// tally counts nil errors and errors matching loser; anything else is returned as unexpected.
func tally(errs []error, loser error) (wins, losses int, unexpected []error) {
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case isErr(err, loser):
			losses++
		default:
			unexpected = append(unexpected, err)
		}
	}
	return wins, losses, unexpected
}
