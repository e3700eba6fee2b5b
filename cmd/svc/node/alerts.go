package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// The alerter is the node's part of alerts (issue #12): app actors raise them (actors.AlertSink);
// the alerter stores each with its chat delivery in the metadata store, then posts due
// deliveries to the team's chat app (a Slack-compatible incoming webhook), retrying with backoff
// while it fails. The outbox is the store's, so nothing waiting is lost across restarts.
//
// Delivery is at least once in one case only: the node stops between the webhook's 2xx and the
// store's removal of the delivery (a few milliseconds); otherwise each alert is posted once.

// Alerter settings.
const (
	alertQueue         = 10_000           // raised alerts waiting to be stored
	thresholdsMaxAge   = 30 * time.Second // how old a cached threshold may get
	deliveryPoll       = time.Second      // how often due deliveries are looked for
	deliveryBatch      = 50
	deliveryTimeout    = 10 * time.Second
	deliveryBackoffMax = 10 * time.Minute
	deliveryGiveUp     = 7 * 24 * time.Hour // a delivery older than this is dropped (logged)
	storeRetry         = time.Second        // wait after the store failed to take an alert
)

type alerter struct {
	meta      sinks.MetaStore
	store     sinks.Alerts
	dashboard string // base URL of alert links
	client    *http.Client
	log       *slog.Logger
	now       func() time.Time

	raised  chan model.Alert
	refresh chan uuid.UUID

	mu    sync.Mutex
	prefs map[uuid.UUID]cachedPrefs
	apps  map[uuid.UUID]model.App

	stop context.CancelFunc
	done sync.WaitGroup
}

type cachedPrefs struct {
	p      model.ThresholdPrefs
	readAt time.Time
	asked  bool // a refresh is queued
}

func newAlerter(meta sinks.MetaStore, store sinks.Alerts, dashboardURL string, log *slog.Logger) *alerter {
	al := &alerter{meta: meta, store: store, dashboard: dashboardURL, client: &http.Client{Timeout: deliveryTimeout},
		log: log, now: time.Now, raised: make(chan model.Alert, alertQueue), refresh: make(chan uuid.UUID, 1024),
		prefs: map[uuid.UUID]cachedPrefs{}, apps: map[uuid.UUID]model.App{}}
	ctx, stop := context.WithCancel(context.Background())
	al.stop = stop
	al.done.Add(2)
	go func() { defer al.done.Done(); al.storeLoop(ctx) }()
	go func() { defer al.done.Done(); al.deliverLoop(ctx) }()
	return al
}

// Close stores what is queued (for at most a few seconds) and stops the loops.
func (al *alerter) Close() error {
	al.stop()
	al.done.Wait()
	return nil
}

// Raise queues an alert; it never waits. A full queue drops the alert with an error log.
func (al *alerter) Raise(a model.Alert) {
	select {
	case al.raised <- a:
	default:
		al.log.Error("alert queue full; alert dropped", "app", a.AppID.String(), "type", a.Type, "entity", a.EntityID)
	}
}

// Thresholds answers from the cache and asks for a refresh when the entry is old.
func (al *alerter) Thresholds(app uuid.UUID) model.ThresholdPrefs {
	al.mu.Lock()
	c, ok := al.prefs[app]
	if !ok {
		c.p = model.DefaultThresholdPrefs()
	}
	if (!ok || al.now().Sub(c.readAt) > thresholdsMaxAge) && !c.asked {
		select {
		case al.refresh <- app:
			c.asked = true
		default:
		}
	}
	al.prefs[app] = c
	al.mu.Unlock()
	return c.p
}

// Recent is sinks.Alerts.LatestAlerts.
func (al *alerter) Recent(ctx context.Context, app uuid.UUID, since time.Time) ([]model.Alert, error) {
	return al.store.LatestAlerts(ctx, app, since)
}

// storeLoop stores raised alerts and refreshes thresholds. On stop it stores what is queued,
// giving up after a few seconds.
func (al *alerter) storeLoop(ctx context.Context) {
	for {
		select {
		case a := <-al.raised:
			al.save(ctx, a)
		case app := <-al.refresh:
			al.readPrefs(ctx, app)
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for {
				select {
				case a := <-al.raised:
					al.save(dctx, a)
				default:
					return
				}
			}
		}
	}
}

func (al *alerter) readPrefs(ctx context.Context, app uuid.UUID) {
	start := al.now()
	p, err := al.meta.ThresholdPrefs(ctx, app)
	if errors.Is(err, sinks.ErrNotFound) {
		p, err = model.DefaultThresholdPrefs(), nil
	}
	al.mu.Lock()
	defer al.mu.Unlock()
	c := al.prefs[app]
	c.asked = false
	switch {
	case c.readAt.After(start):
		// setPrefs took newer thresholds while this read was on its way.
	case err != nil:
		al.log.Warn("alerts: thresholds not read; the last ones stay", "app", app.String(), "error", err.Error())
		c.readAt = al.now() // do not ask again at once
	default:
		c.p, c.readAt = p, al.now()
	}
	al.prefs[app] = c
}

// setPrefs caches thresholds this node's dashboard just stored (dashboard.API.OnThresholds), so
// that the next batch is judged by them: without it, a batch right after a change was judged
// by the defaults or the old ones until the refresh came round. Other nodes read them within
// thresholdsMaxAge.
func (al *alerter) setPrefs(app uuid.UUID, p model.ThresholdPrefs) {
	al.mu.Lock()
	defer al.mu.Unlock()
	c := al.prefs[app]
	c.p, c.readAt = p, al.now()
	al.prefs[app] = c
}

// appOf returns the app (for its team and name), cached.
func (al *alerter) appOf(ctx context.Context, id uuid.UUID) (model.App, error) {
	al.mu.Lock()
	a, ok := al.apps[id]
	al.mu.Unlock()
	if ok {
		return a, nil
	}
	a, err := al.meta.App(ctx, id)
	if err != nil {
		return a, err
	}
	al.mu.Lock()
	al.apps[id] = a
	al.mu.Unlock()
	return a, nil
}

// save stores an alert with its delivery, retrying while the store is unavailable (until ctx
// ends: then the alert is logged as lost).
func (al *alerter) save(ctx context.Context, a model.Alert) {
	for {
		err := al.trySave(ctx, a)
		if err == nil {
			return
		}
		if errors.Is(err, sinks.ErrNotFound) || errors.Is(err, sinks.ErrInvalid) { // the app is gone, or the store refuses it for good
			al.log.Warn("alert dropped", "app", a.AppID.String(), "type", a.Type, "error", err.Error())
			return
		}
		select {
		case <-ctx.Done():
			al.log.Error("alert not stored", "app", a.AppID.String(), "type", a.Type, "entity", a.EntityID, "error", err.Error())
			return
		case <-time.After(storeRetry):
		}
	}
}

func (al *alerter) trySave(ctx context.Context, a model.Alert) error {
	app, err := al.appOf(ctx, a.AppID)
	if err != nil {
		return fmt.Errorf("app of alert: %w", err)
	}
	a.TeamID = app.TeamID
	a.URL = alertURL(al.dashboard, &a)
	a.EntityID, a.Message = storable(a.EntityID), storable(a.Message)
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	if _, err := al.store.AddAlert(ctx, a, true); err != nil {
		return fmt.Errorf("store alert: %w", err)
	}
	return nil
}

// storable makes text the metadata stores keep: valid UTF-8 without NUL (an exception message
// or a bug report's description may hold either; a webhook's status line may not be UTF-8).
func storable(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// alertURL is where the dashboard shows the alert's entity, in the paths of the reference's
// web dashboard: a group's page for spikes and new groups, the report's page for bug reports.
func alertURL(base string, a *model.Alert) string {
	switch a.Type {
	case model.AlertBugReport:
		return fmt.Sprintf("%s/%s/bug_reports/%s/%s", base, a.TeamID, a.AppID, a.EntityID)
	case model.AlertANRSpike, model.AlertNewANRGroup:
		return fmt.Sprintf("%s/%s/anrs/%s/%s", base, a.TeamID, a.AppID, a.EntityID)
	}
	return fmt.Sprintf("%s/%s/crashes/%s/%s", base, a.TeamID, a.AppID, a.EntityID)
}

// deliverLoop posts due deliveries every deliveryPoll until ctx ends.
func (al *alerter) deliverLoop(ctx context.Context) {
	every(ctx, deliveryPoll, func() bool { al.deliverDue(ctx); return true })
}

func (al *alerter) deliverDue(ctx context.Context) {
	due, err := al.store.DueDeliveries(ctx, al.now(), deliveryBatch)
	if err != nil {
		if ctx.Err() == nil {
			al.log.Warn("alerts: due deliveries not read", "error", err.Error())
		}
		return
	}
	for i := range due {
		if ctx.Err() != nil {
			return
		}
		al.deliver(ctx, &due[i])
	}
}

// deliver posts one delivery, then removes it from the outbox, or postpones it with backoff.
func (al *alerter) deliver(ctx context.Context, d *model.Delivery) {
	a := &d.Alert
	chat, err := al.meta.ChatApp(ctx, a.TeamID)
	switch {
	case errors.Is(err, sinks.ErrNotFound) || (err == nil && (!chat.Enabled || chat.WebhookURL == "")):
		al.finish(ctx, a.ID) // no chat app to post to: the alert is listed, nothing to deliver
		return
	case err != nil:
		return // the metadata store is down: try again at the next poll
	}
	err = al.post(ctx, chat.WebhookURL, a)
	if err == nil {
		al.finish(ctx, a.ID)
		return
	}
	if ctx.Err() != nil {
		return
	}
	if al.now().Sub(a.CreatedAt) > deliveryGiveUp {
		al.log.Error("alert delivery given up", "alert", a.ID.String(), "attempts", d.Attempts+1, "error", err.Error())
		al.finish(ctx, a.ID)
		return
	}
	wait := min(time.Second<<min(d.Attempts, 20), deliveryBackoffMax)
	al.log.Warn("alert delivery failed; retrying", "alert", a.ID.String(), "attempts", d.Attempts+1, "in", wait.String(), "error", err.Error())
	if perr := al.store.PostponeDelivery(ctx, a.ID, d.Attempts+1, al.now().Add(wait), storable(err.Error())); perr != nil {
		al.log.Warn("alerts: delivery not postponed", "alert", a.ID.String(), "error", perr.Error())
	}
}

func (al *alerter) finish(ctx context.Context, id uuid.UUID) {
	if err := al.store.FinishDelivery(ctx, id); err != nil {
		al.log.Warn("alerts: delivery not removed from the outbox", "alert", id.String(), "error", err.Error())
	}
}

// alertTitles are the chat titles of the alert types.
var alertTitles = map[string]string{
	model.AlertCrashSpike: "Crash Spike Alert", model.AlertANRSpike: "ANR Spike Alert", model.AlertBugReport: "New Bug Report",
	model.AlertNewCrashGroup: "New Crash", model.AlertNewANRGroup: "New ANR",
}

// post sends the alert to a Slack-compatible incoming webhook.
func (al *alerter) post(ctx context.Context, webhook string, a *model.Alert) error {
	app, err := al.appOf(ctx, a.AppID)
	if err != nil {
		return fmt.Errorf("app of alert: %w", err)
	}
	text := fmt.Sprintf("🚨 %s - %s\n\n%s\n\n%s", app.Name, alertTitles[a.Type], a.Message, a.URL)
	body, _ := json.Marshal(map[string]string{"text": text})
	rctx, cancel := context.WithTimeout(ctx, deliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, webhook, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := al.client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}
