// Package sinks defines svc's storage interfaces. Each interface's doc comment is its contract;
// the backends are sibling packages: EventStore, Analytics and Spans in badgerevents (embedded)
// and clickhouse, MetaStore in badgermeta (embedded) and postgres, BlobStore in localblob (embedded)
// and s3blob. Each interface has one conformance suite every backend of it must pass:
// eventstest (EventStore, Analytics and Spans, with Reference and SpansReference, the
// brute-force answers of Analytics and Spans),
// metatest (MetaStore), blobtest (BlobStore) and snaptest (Snapshots: badgerdb and postgres);
// sinktest starts the servers the production backends are tested on. The node's own durable
// structures are here too: spool (the write-ahead log of accepted batches), gate (the request
// gate of PUT /events, node-local or shared by a cluster, with its suite gatetest) and badgerdb
// (the Badger databases of a data directory).
package sinks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
)

// Snapshots keeps actor state between an actor's activations: a session actor saves its state
// when it is passivated or stopped and loads it when it is activated again, on whichever node
// that happens. A single node keeps snapshots in its own Badger database (badgerdb.Snapshots);
// a cluster keeps them in PostgreSQL, which every member reaches.
type Snapshots interface {
	// LoadSnapshot returns the state last saved for (kind, identity); found is false when none
	// was saved or it expired. The returned slice is the caller's.
	LoadSnapshot(ctx context.Context, kind, identity string) (state []byte, found bool, err error)
	// SaveSnapshot replaces the state of (kind, identity), durably once it returns; it expires
	// ttl after the save (ttl > 0).
	SaveSnapshot(ctx context.Context, kind, identity string, state []byte, ttl time.Duration) error
}

// Errors every backend returns (wrapped or not; callers use errors.Is).
var (
	// ErrNotFound: the thing asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a create would break a uniqueness rule, or a compare-and-swap lost.
	ErrConflict = errors.New("conflict")
	// ErrLastOwner: the change would leave a team without an owner.
	ErrLastOwner = errors.New("team would have no owner")
	// ErrInvalid: an argument breaks a rule of the contract (a bad blob key, an unknown role).
	ErrInvalid = errors.New("invalid argument")
	// ErrUnavailable: the store did not answer: it could not be reached, the connection broke,
	// or the call's deadline passed before it answered. The call may or may not have taken
	// effect. Backends return it as an *UnavailableError (Unavailable), which names the kind of
	// store; callers answer 503 + Retry-After (httpx.StoreUnavailable) and never show the cause,
	// which may hold addresses and user names.
	ErrUnavailable = errors.New("store unavailable")
)

// The kinds of store an UnavailableError names.
const (
	StoreMeta   = "metadata"
	StoreEvents = "event"
	StoreBlobs  = "blob"
)

// UnavailableError is ErrUnavailable of one kind of store, with its cause.
type UnavailableError struct {
	Store string // StoreMeta, StoreEvents or StoreBlobs
	Err   error
}

func (e *UnavailableError) Error() string {
	return "the " + e.Store + " store is unavailable: " + e.Err.Error()
}

// Unwrap makes errors.Is match both ErrUnavailable and the cause.
func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }

// Unavailable wraps err as ErrUnavailable of the kind of store given.
func Unavailable(store string, err error) error { return &UnavailableError{Store: store, Err: err} }

// EventStore keeps events and spans, the bulk of svc's data.
//
// Durability: when WriteEvents or WriteSpans returns nil, every row of the call is durable and
// visible to the reads of this interface. On error, any subset of the rows may be stored; the
// caller retries the whole call.
//
// Idempotency: rows are identified by (app id, event id, timestamp) and (app id, span id,
// start time). Writing a row that is already stored, in the same call or a later one, leaves
// one copy; reads and counts never show it twice, whether the writes are one after another or
// at once. SDK retries and the spool's replays after a crash send rows again unchanged, and
// rely on this. An id written again at another time is another row (both backends' keys hold
// the time; ClickHouse's the type too); which one Event or Span returns is the backend's, and
// Count may count it once (ClickHouse: distinct ids) or twice (Badger).
//
// Ordering: none. Rows of one call need not be sorted; reads sort as they document.
//
// Concurrency: all methods are safe for concurrent use.
type EventStore interface {
	WriteEvents(ctx context.Context, events []model.Event) error
	WriteSpans(ctx context.Context, spans []model.Span) error
	// Event returns one stored event with every field as written, or ErrNotFound. Its cost
	// is the backend's: the embedded one finds an id that is not a bug report's by a scan of
	// the app's rows.
	Event(ctx context.Context, appID, eventID uuid.UUID) (model.Event, error)
	// BugReport returns the app's bug report (an event of model.BugReportType) with this id,
	// or ErrNotFound when it has none: no event with the id, or one of another type. Unlike
	// Event it answers from an index on both backends, whatever the id (the dashboard's bug
	// report pages call it with ids from their URLs).
	BugReport(ctx context.Context, appID, id uuid.UUID) (model.Event, error)
	// Span returns one stored span with every field as written, or ErrNotFound.
	Span(ctx context.Context, appID uuid.UUID, spanID string) (model.Span, error)
	// Count returns how many events and spans of the app are stored: distinct ids on
	// ClickHouse, rows on the embedded store (an id written at two times counts twice there).
	Count(ctx context.Context, appID uuid.UUID) (events, spans int64, err error)
	// DeleteBefore removes the app's events whose timestamp, and spans whose start time, is
	// before `before` (retention), compared in nanoseconds; rows at or after it and other apps'
	// rows stay. It returns once the deletion is durable or, where the backend deletes
	// asynchronously (ClickHouse mutations), once it is scheduled; reads (Event, Span, Count,
	// Usage) stop showing the rows when it completes. Rows written after the call are not
	// deleted by it. Calling it again, or with nothing to delete, is harmless.
	DeleteBefore(ctx context.Context, appID uuid.UUID, before time.Time) error
	// Usage counts, per UTC calendar month overlapping [from, to), the app's rows inside
	// [from, to): distinct sessions (with an event or span in the month; the nil session id is
	// no session), events, spans and stored bytes. A row stored twice (replay) counts once.
	// Bytes is the rows' size as the backend measures it (each backend documents how): an
	// approximation, not comparable across backends. Months without rows are left out; the
	// result is ascending by month and empty when from is not before to.
	Usage(ctx context.Context, appID uuid.UUID, from, to time.Time) ([]model.MonthUsage, error)
	// Ping reports whether the store can serve reads and writes now.
	Ping(ctx context.Context) error
	Close() error
}

// Idler is an EventStore that keeps memory between writes for the next one (the embedded
// store's write scratch, ClickHouse's column slices: tens of MB flat out). Idle says writes
// have stopped for a while: it lets that memory go, and the next write makes it anew; a write
// in flight may keep its own. The flusher calls it when it lets its own buffers go.
type Idler interface {
	Idle()
}

// Analytics answers the dashboard's crash, ANR, journey and health queries over an event
// store's events. Both event stores implement it; sinks/eventstest checks every method against
// a brute-force reference (eventstest.Reference) built on the Go definitions in model
// (EventFilter.Match, IssueQuery.MatchIssue, UDExpr.Eval), so that the SQL of one backend and
// the Go of the other agree. Events are those stored (a row written twice counts once); spans
// never count. Times are Unix nanoseconds, windows [From, To). Events of one timestamp are
// ordered by event id, compared as bytes, wherever an order is asked for.
//
// Plot buckets (model.Buckets: a time group in a time zone) are by.Start of the row's time, in
// Unix nanoseconds. One limit: in a zone other than UTC, ClickHouse buckets only rows from
// 1971 to 2104 in the zone (its DateTime and zone tables end there) and gives rows outside
// their UTC bucket; the ingest API accepts no such times.
type Analytics interface {
	// IssueCells aggregates the issue events matching q into model.IssueCell per (group id,
	// class, version, bucket): the count, and the latest event (greatest (timestamp, id)) with
	// its display. With by.Bucketed the bucket is by.By.Start of the event's time (in Unix
	// ns), else 0 (one cell per group, class and version over the window). Order: none.
	IssueCells(ctx context.Context, q *model.IssueQuery, by model.Cells) ([]model.IssueCell, error)
	// IssueEvents returns a page of the issue events matching q in the instance order
	// (timestamp descending, then id descending) as model.EventPage says, every field as
	// stored; at most Limit events (Limit ≥ 1).
	IssueEvents(ctx context.Context, q *model.IssueQuery, page model.EventPage) ([]model.Event, error)
	// SessionBuckets counts, per version and bucket (by.Start of the event's time, in Unix ns),
	// the sessions with an event matching f, and of those the sessions where one of those
	// events is a crash (exception, fatal) and an ANR. A session with events of two versions
	// or buckets counts in each. Order: none.
	SessionBuckets(ctx context.Context, f *model.EventFilter, by model.Buckets) ([]model.SessionBucket, error)
	// Metrics fills the store's part of model.MetricsInput (everything but the build sizes)
	// for the app's events in [from, to): AllSessions, and per side the session counts as
	// model.MetricsInput.AddSession defines them and the launch summaries (LaunchSummary of the
	// events' LaunchKind/LaunchMs facts). With sel nil every session and launch is Selected.
	Metrics(ctx context.Context, app uuid.UUID, from, to int64, sel *model.AppVersion) (model.MetricsInput, error)
	// FilterValues lists the distinct non-empty attribute values of the app's events (every
	// stored event; with classes, only the issue events of those classes), each list sorted
	// ascending except Versions (model.FilterValues says how).
	FilterValues(ctx context.Context, app uuid.UUID, classes []model.IssueClass) (model.FilterValues, error)
	// SessionWalks calls fn once per session selected by q (model.WalkQuery) with all of the
	// session's walk events (screen events, and crash and ANR events with a group), ascending by
	// timestamp, then event id. Without GroupID a session is selected by a walk event in the
	// window (a handled exception alone selects none); with GroupID by an issue event of that
	// group and class in it, and a session so selected that has no walk event gets an empty
	// slice. Sessions come in no particular order. fn's slice is reused after it returns. An
	// error from fn stops the walk and is returned.
	SessionWalks(ctx context.Context, q *model.WalkQuery, fn func(session uuid.UUID, events []model.WalkEvent) error) error
	// JourneyFacts calls fn with every journey fact (model.AppendJourneyFacts of a session's
	// walk events, all of them at any time) of the app's sessions whose event time is in
	// [from, to), in no particular order: the facts AddSessionWalk counts over SessionWalks of
	// the window with KeepWalkEvent(from, to, nil). A store may pass facts summed
	// (model.JourneyFact's N and Last: facts equal but for their events' times and ids, in one
	// UTC day, every time of them in [from, to)); a caller counts f.Count() of each. fn's fact is
	// reused after it returns; an error from fn stops the walk and is returned.
	JourneyFacts(ctx context.Context, app uuid.UUID, from, to int64, fn func(f *model.JourneyFact) error) error
	// PathSessions returns, for the n sessions whose latest issue event of the group and class
	// is the most recent (newest first; latest and most recent by timestamp, then event id),
	// the session's events up to and including that issue event in that order (an event at its
	// timestamp with a greater id is after it), oldest first, at most steps of them (the last
	// ones), leaving out cpu_usage, memory_usage and memory_usage_absolute events
	// (model.IsSample). Every field as stored.
	PathSessions(ctx context.Context, app uuid.UUID, class model.IssueClass, groupID string, n, steps int) ([][]model.Event, error)
}

// MetaStore keeps the metadata svc manages: users, teams, memberships, apps, API keys and
// dashboard sessions.
//
// Durability: a call that returns nil has committed; every later read sees it.
// Atomicity: each method is one transaction: it changes all it says or nothing.
// Errors: ErrNotFound for a missing row, ErrConflict for a uniqueness or compare-and-swap
// failure, ErrLastOwner where a team would lose its last owner, and ErrUnavailable (as an
// *UnavailableError of StoreMeta) when the store did not answer: a backend that talks to a
// server wraps every failure to reach it, every broken connection and every expired deadline
// of ctx in it, and bounds each call by a timeout of its own so that a frozen server is seen in
// seconds. A backend that never waits (the embedded one) may ignore ctx's deadline; if it
// does not, an expired deadline is ErrUnavailable too. ErrUnavailable is never ErrNotFound: a
// caller must not conclude that a row is missing because the store did not answer.
// Times are stored with at least microsecond precision and come back in UTC.
// Concurrency: all methods are safe for concurrent use; the atomic ones (RotateAuthSession,
// SetMemberRole, RemoveMember, RotateAPIKey) stay correct under concurrent calls.
type MetaStore interface {
	// CreateUser stores a new user, their own team and their owner membership of it.
	// ErrConflict when the email (case-insensitive) or an id is taken.
	CreateUser(ctx context.Context, u model.User, ownTeam model.Team) error
	User(ctx context.Context, id uuid.UUID) (model.User, error)
	// UserByEmail matches the email case-insensitively.
	UserByEmail(ctx context.Context, email string) (model.User, error)
	// OwnTeam returns the team created with the user.
	OwnTeam(ctx context.Context, userID uuid.UUID) (model.Team, error)
	// UpdateUser replaces name, confirmed_at, last_sign_in_at and updated_at of a stored user.
	UpdateUser(ctx context.Context, u model.User) error

	// CreateTeam stores a team with ownerID as its owner.
	CreateTeam(ctx context.Context, t model.Team, ownerID uuid.UUID) error
	Team(ctx context.Context, id uuid.UUID) (model.Team, error)
	// RenameTeam sets the name and updated_at.
	RenameTeam(ctx context.Context, id uuid.UUID, name string, at time.Time) error
	// TeamsOfUser lists the user's teams with their role, oldest team first.
	TeamsOfUser(ctx context.Context, userID uuid.UUID) ([]model.TeamRole, error)

	// AddMember adds a user to a team; ErrConflict when already a member.
	AddMember(ctx context.Context, m model.Member) error
	// Role returns the user's role in the team, or ErrNotFound when not a member.
	Role(ctx context.Context, teamID, userID uuid.UUID) (model.Role, error)
	// Members lists a team's members, oldest membership first.
	Members(ctx context.Context, teamID uuid.UUID) ([]model.Member, error)
	// SetMemberRole changes a member's role; ErrLastOwner when it would demote the last owner.
	SetMemberRole(ctx context.Context, teamID, userID uuid.UUID, role model.Role, at time.Time) error
	// RemoveMember removes a member; ErrLastOwner when it is the last owner.
	RemoveMember(ctx context.Context, teamID, userID uuid.UUID) error

	// CreateApp stores an app and its first API key. ErrConflict when the key is taken.
	CreateApp(ctx context.Context, a model.App, key model.APIKey) error
	App(ctx context.Context, id uuid.UUID) (model.App, error)
	// AppsOfTeam lists a team's apps, oldest first.
	AppsOfTeam(ctx context.Context, teamID uuid.UUID) ([]model.App, error)
	// UpdateApp replaces name, unique_id, platform, retention_days and updated_at.
	UpdateApp(ctx context.Context, a model.App) error
	// AppByAPIKey finds the app a key belongs to, revoked or not; the caller checks Revoked.
	AppByAPIKey(ctx context.Context, key string) (model.App, model.APIKey, error)
	// ActiveAPIKey returns the app's one unrevoked key.
	ActiveAPIKey(ctx context.Context, appID uuid.UUID) (model.APIKey, error)
	// RotateAPIKey revokes every key of the app and stores key as its only active one.
	RotateAPIKey(ctx context.Context, key model.APIKey) error
	// TouchAPIKey records that the key was used at the given time (kept only when later).
	TouchAPIKey(ctx context.Context, key string, at time.Time) error

	// PutBuild records a build's size; putting the same (app, version name, version code,
	// build type) again replaces Size and UpdatedAt. ErrNotFound for an unknown app.
	PutBuild(ctx context.Context, b model.Build) error
	// Builds lists an app's builds, most recently updated first.
	Builds(ctx context.Context, appID uuid.UUID) ([]model.Build, error)
	// AddMappings stores mapping file records, all or none. ErrConflict when an id is taken,
	// ErrNotFound for an unknown app.
	AddMappings(ctx context.Context, ms []model.Mapping) error
	// Mappings lists the mapping records of one version of an app, oldest first.
	Mappings(ctx context.Context, appID uuid.UUID, versionName, versionCode string) ([]model.Mapping, error)
	// SDKConfig returns the app's SDK configuration and when it was set; ErrNotFound when it
	// was never set (the caller serves model.DefaultSDKConfig).
	SDKConfig(ctx context.Context, appID uuid.UUID) (model.SDKConfig, time.Time, error)
	// SetSDKConfig replaces the app's SDK configuration. ErrNotFound for an unknown app.
	SetSDKConfig(ctx context.Context, appID uuid.UUID, c model.SDKConfig, at time.Time) error

	// AllApps lists every app, oldest first (background jobs such as retention).
	AllApps(ctx context.Context) ([]model.App, error)

	// CreateInvites stores invites, all or none. ErrNotFound for an unknown team, ErrConflict
	// for a taken id.
	CreateInvites(ctx context.Context, invs []model.Invite) error
	Invite(ctx context.Context, id uuid.UUID) (model.Invite, error)
	// Invites lists a team's invites, expired ones included, oldest first.
	Invites(ctx context.Context, teamID uuid.UUID) ([]model.Invite, error)
	// UpdateInvite replaces role, expires_at and updated_at of a stored invite.
	UpdateInvite(ctx context.Context, inv model.Invite) error
	DeleteInvite(ctx context.Context, id uuid.UUID) error
	// AcceptInvites makes the user a member of the team of every invite for email
	// (case-insensitive) that has not expired at now, with the invited role (a team the user
	// is in already keeps the user's role), and deletes those invites. It returns the
	// memberships it created.
	AcceptInvites(ctx context.Context, email string, userID uuid.UUID, now time.Time) ([]model.Member, error)

	// ThresholdPrefs returns an app's thresholds; ErrNotFound when never set (the caller
	// serves model.DefaultThresholdPrefs).
	ThresholdPrefs(ctx context.Context, appID uuid.UUID) (model.ThresholdPrefs, error)
	// SetThresholdPrefs replaces an app's thresholds. ErrNotFound for an unknown app.
	SetThresholdPrefs(ctx context.Context, appID uuid.UUID, p model.ThresholdPrefs, at time.Time) error
	// PutShortFilter stores a short filter; putting the same code again changes nothing.
	// ErrNotFound for an unknown app.
	PutShortFilter(ctx context.Context, f model.ShortFilter) error
	// ShortFilter returns the filters a code stands for in an app.
	ShortFilter(ctx context.Context, appID uuid.UUID, code string) (model.ShortFilter, error)
	// ChatApp returns a team's chat integration; ErrNotFound when none is set.
	ChatApp(ctx context.Context, teamID uuid.UUID) (model.ChatApp, error)
	// SetChatApp replaces a team's chat integration. ErrNotFound for an unknown team.
	SetChatApp(ctx context.Context, c model.ChatApp) error

	CreateAuthSession(ctx context.Context, s model.AuthSession) error
	AuthSession(ctx context.Context, id uuid.UUID) (model.AuthSession, error)
	// RotateAuthSession replaces RefreshID and ExpiresAt when the stored RefreshID equals
	// oldRefreshID; ErrConflict otherwise, so a refresh token is used at most once.
	RotateAuthSession(ctx context.Context, id, oldRefreshID, newRefreshID uuid.UUID, expiresAt time.Time) error
	DeleteAuthSession(ctx context.Context, id uuid.UUID) error
	// DeleteExpiredAuthSessions removes sessions whose ExpiresAt is before now; returns how many.
	DeleteExpiredAuthSessions(ctx context.Context, now time.Time) (int, error)

	Ping(ctx context.Context) error
	Close() error
}

// Upload is a signed, time-limited address that accepts one HTTP PUT of a blob.
type Upload struct {
	URL       string
	Headers   map[string]string // every one must be sent with the PUT
	ExpiresAt time.Time
}

// BlobStore keeps attachments and mapping files.
//
// Keys are 1–512 characters of [A-Za-z0-9._/-], without a leading '/' and without "..";
// anything else is ErrInvalid.
// Durability: when Put returns nil, or a PUT to a signed upload URL has answered 2xx, the blob is
// durable and Get returns it. Putting a key again replaces the blob.
// Signed URLs: SignUpload's URL accepts a PUT carrying every header of Upload.Headers until
// ExpiresAt and is refused (403) after; SignDownload's URL serves a GET until it expires.
// Concurrency: all methods are safe for concurrent use.
type BlobStore interface {
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get returns the blob's content, or ErrNotFound.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	SignUpload(ctx context.Context, key string, ttl time.Duration) (Upload, error)
	SignDownload(ctx context.Context, key string, ttl time.Duration) (string, error)
	// Delete removes the blob; a key that holds nothing is no error. Ingest uses it to take
	// back the blob parts of a request it refuses.
	Delete(ctx context.Context, key string) error
	Ping(ctx context.Context) error
}

// Blob is one blob's key and bytes, for BlobBatch.
type Blob struct {
	Key   string
	Bytes []byte
}

// BlobBatch is a BlobStore that stores many blobs at one durability point: PutBatch stores each
// blob as Put would (same key rules and errors), and all of them are durable when it returns
// nil. On error any subset may be stored. It exists because a durable Put costs syncs of its
// own (two fsyncs on local disk), which a caller holding many small blobs, the flusher with a
// flush's inline attachments, pays once per batch instead.
type BlobBatch interface {
	PutBatch(ctx context.Context, blobs []Blob) error
}

// CheckBlobKey returns ErrInvalid (wrapped, naming the rule) when key breaks the BlobStore key
// rule; backends call it first.
func CheckBlobKey(key string) error {
	if len(key) == 0 || len(key) > 512 {
		return fmt.Errorf("%w: blob key must be 1 to 512 characters", ErrInvalid)
	}
	if key[0] == '/' || strings.Contains(key, "..") {
		return fmt.Errorf("%w: blob key %q must not start with / or contain ..", ErrInvalid, key)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '/' || c == '-') {
			return fmt.Errorf("%w: blob key %q has a character outside [A-Za-z0-9._/-]", ErrInvalid, key)
		}
	}
	return nil
}

// Spans answers the dashboard's span and trace queries over an event store's spans (issue
// #13). Both event stores implement it; sinks/eventstest (RunSpans) checks every method against
// a brute-force reference (eventstest.SpansReference) built on model.SpanQuery.Match,
// model.SpanBucket, model.SpanDurationsOf and model.CompareSpansNewest. Spans are those stored:
// a span written twice (same app and span id) is one span. A root span is one without a
// parent (empty ParentID). Times are Unix nanoseconds, windows [From, To) on StartTime.
type Spans interface {
	// RootSpanNames lists the distinct names of the app's root spans (every stored one, no
	// window), most recently seen first: by the greatest StartTime of a root span of that
	// name, descending, then by name ascending; at most limit names (limit ≥ 1).
	RootSpanNames(ctx context.Context, app uuid.UUID, limit int) ([]string, error)
	// RootSpans returns the spans q selects (model.SpanQuery.Match: root spans of q.Name in the
	// window with the filters and statuses), newest first (model.CompareSpansNewest: StartTime
	// descending, then span id descending as bytes), skipping the first offset (≥ 0) and at
	// most limit (≥ 1) of them, every field as stored.
	RootSpans(ctx context.Context, q *model.SpanQuery, limit, offset int) ([]model.Span, error)
	// RootSpanDurations aggregates the spans q selects per app version and bucket (by.Start of
	// the StartTime, model.SpanBucket; Analytics says how ClickHouse buckets in a zone): their
	// count and the percentiles of Duration by model.SpanDurationsOf, which is ClickHouse's
	// quantileExact (the element at index ⌊level·n⌋ of the sorted durations). Cells without
	// spans are left out. Order: none.
	RootSpanDurations(ctx context.Context, q *model.SpanQuery, by model.Buckets) ([]model.SpanDurations, error)
	// Trace returns every span of the app with the trace id, root or not, every field as
	// stored, newest first (model.CompareSpansNewest); ErrNotFound when there is none.
	Trace(ctx context.Context, app uuid.UUID, traceID string) ([]model.Span, error)
}

// Network answers the network pages' queries over an event store's http events (issue #13).
// Both event stores implement it; sinks/eventstest (RunNetwork) checks every method against a
// brute-force reference (eventstest.NetworkReference) built on model.NetworkQuery.Match and
// KeyOf, model.HTTPAcc and model.Buckets.Start. A request is an http event as stored (an event
// written twice is one request) with its derived model.HTTPFacts; only completed requests
// (HTTPFacts.Completed: a domain and a status) are ever counted or listed. Times are Unix
// nanoseconds, windows [From, To) on the event's Timestamp.
type Network interface {
	// HTTPPaths lists the distinct (domain, path) of the app's completed requests, every
	// stored one (no window), ordered by domain then path, ascending as bytes. It is what the
	// app's path patterns are rebuilt from.
	HTTPPaths(ctx context.Context, app uuid.UUID) ([]model.HTTPPath, error)
	// HTTPStats aggregates the requests q selects (NetworkQuery.Match) into one HTTPStat per
	// group (NetworkQuery.KeyOf under by, the bucket being buckets.Start of the event time;
	// requests KeyOf leaves out are not counted): the count, the counts per status class, the
	// distinct sessions, and the percentiles of the known latencies by model.DurationQuantile
	// (ClickHouse's quantileExact). Groups without requests are left out. Order: by key
	// (model.CompareHTTPKeys).
	HTTPStats(ctx context.Context, q *model.NetworkQuery, by model.HTTPGroup, buckets model.Buckets) ([]model.HTTPStat, error)
}
