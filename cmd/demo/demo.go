package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svc-dev/svc/cmd/internal/adminapi"
	"github.com/svc-dev/svc/cmd/internal/replay"
	"github.com/svc-dev/svc/model"
)

// Options is one demo load into a running node.
type Options struct {
	URL       string             // the node's public base URL, e.g. http://localhost:8080
	Admin     *adminapi.Client   // its operator API
	Email     string             // the demo user; created on the first run, reused after
	Name      string             // their display name
	AppName   string             // the app created by this run
	Templates []*replay.Template // the recorded bodies, each sent once
	Now       func() time.Time   // nil: time.Now
	Wait      time.Duration      // how long the crash groups may take to show
	Log       io.Writer          // progress lines
	HTTP      *http.Client       // nil: a client with a one-minute timeout
}

// Result is what a demo load made and saw.
type Result struct {
	Email       string
	UserReused  bool
	TeamID      string
	AppID       string
	APIKey      string
	AccessToken string
	Batches     int
	Events      int
	Spans       int
	Crashes     int     // fatal exceptions sent that fall in the default window
	Groups      []group // the crash group list as the dashboard answers it
}

// group is the part of a crash group list item the demo shows.
type group struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Message string `json:"message"`
	Count   uint64 `json:"count"`
}

// Query is the dashboard request that shows the crash groups, ready to paste into a shell.
func (r *Result) Query(base string) string {
	return fmt.Sprintf("curl -sS -H 'Authorization: Bearer %s' %s/apps/%s/crashGroups", r.AccessToken, base, r.AppID)
}

// Load creates (or reuses) the demo user, creates an app, sends every template once with fresh
// ids and its times moved to now, and waits until the dashboard's crash group list, asked
// without a window as a new user would, counts every crash sent. It fails when the list stays
// empty or short.
func Load(ctx context.Context, o Options) (*Result, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: time.Minute}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	r := &Result{Email: o.Email}
	u, err := o.Admin.CreateUser(ctx, o.Email, o.Name)
	var se *adminapi.StatusError
	switch {
	case errors.As(err, &se) && se.Code == http.StatusConflict:
		r.UserReused = true
		fmt.Fprintf(o.Log, "demo: user %s exists already; reusing it\n", o.Email)
	case err != nil:
		return nil, fmt.Errorf("create user: %w", err)
	default:
		fmt.Fprintf(o.Log, "demo: created user %s\n", o.Email)
	}
	tok, err := o.Admin.SignIn(ctx, o.Email)
	if err != nil {
		return nil, fmt.Errorf("sign in %s: %w", o.Email, err)
	}
	if !r.UserReused && tok.OwnTeamID != u.OwnTeamID {
		return nil, fmt.Errorf("sign in answered team %s, create-user %s", tok.OwnTeamID, u.OwnTeamID)
	}
	r.TeamID, r.AccessToken = tok.OwnTeamID, tok.AccessToken
	app, err := o.Admin.CreateApp(ctx, r.TeamID, o.AppName)
	if err != nil {
		return nil, fmt.Errorf("create app: %w", err)
	}
	r.AppID, r.APIKey = app.AppID, app.APIKey
	fmt.Fprintf(o.Log, "demo: created app %q (%s) in team %s\n", o.AppName, r.AppID, r.TeamID)

	now := o.Now()
	from, to := defaultWindow(now)
	rw := replay.NewRewriter()
	groups := map[string]bool{}
	for _, t := range o.Templates {
		body := rw.Render(nil, t, now.UnixNano())
		crashes, ids, err := crashesIn(body, from, to)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		if err := putEvents(ctx, o.HTTP, o.URL, r.APIKey, body); err != nil {
			return nil, fmt.Errorf("send %s: %w", t.Name, err)
		}
		r.Batches++
		r.Events += t.Events
		r.Spans += t.Spans
		r.Crashes += crashes
		for _, id := range ids {
			groups[id] = true
		}
	}
	fmt.Fprintf(o.Log, "demo: sent %d recorded SDK batches (%d events, %d spans; %d crashes in %d groups) with times moved to now\n",
		r.Batches, r.Events, r.Spans, r.Crashes, len(groups))
	if r.Crashes == 0 {
		return nil, errors.New("the recorded batches hold no crash in the default window; nothing would show")
	}

	fmt.Fprintf(o.Log, "demo: waiting until GET /apps/%s/crashGroups counts them\n", r.AppID)
	deadline := time.Now().Add(o.Wait)
	for {
		got, err := crashGroups(ctx, o.HTTP, o.URL, r.AccessToken, r.AppID)
		if err != nil {
			return nil, err
		}
		r.Groups = got
		if n := total(got); n == uint64(r.Crashes) && len(got) == len(groups) {
			return r, nil
		}
		if time.Now().After(deadline) {
			if len(got) == 0 {
				return nil, fmt.Errorf("the crash group list is still empty %s after sending %d crashes: the data did not become queryable", o.Wait, r.Crashes)
			}
			return nil, fmt.Errorf("after %s the crash group list has %d groups counting %d crashes; sent %d groups, %d crashes",
				o.Wait, len(got), total(got), len(groups), r.Crashes)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func total(gs []group) uint64 {
	var n uint64
	for _, g := range gs {
		n += g.Count
	}
	return n
}

// defaultWindow is the dashboard's window when a request names none: the last 7 UTC calendar
// days, today included.
func defaultWindow(now time.Time) (from, to int64) {
	day := now.UTC().Truncate(24 * time.Hour)
	return day.AddDate(0, 0, -6).UnixNano(), day.AddDate(0, 0, 1).UnixNano()
}

// crashesIn counts the crashes (fatal exceptions) of a body whose timestamp is in [from, to),
// as the node derives them, and returns their group ids.
func crashesIn(body []byte, from, to int64) (int, []string, error) {
	b, err := model.DecodeBatch(body, uuid.Nil, false)
	if err != nil {
		return 0, nil, fmt.Errorf("replayed body is not a valid batch: %w", err)
	}
	n := 0
	var ids []string
	for i := range b.Events {
		e := &b.Events[i]
		if e.Timestamp < from || e.Timestamp >= to {
			continue
		}
		f := model.DeriveFacts(e)
		if model.ClassOf(e.Type, &f) == model.ClassCrash {
			n++
			ids = append(ids, f.GroupID)
		}
	}
	return n, ids, nil
}

// putEvents sends one JSON body as an SDK does, with a fresh request id; 429 and 503 are
// retried as SDKs do, after Retry-After.
func putEvents(ctx context.Context, hc *http.Client, base, key string, body []byte) error {
	reqID := uuid.NewString()
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/events", strings.NewReader(string(body)))
		if err != nil {
			return fmt.Errorf("request: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("svc-req-id", reqID)
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("PUT /events: %w", err)
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			return nil
		case (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && attempt < 5:
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(retryDelay(resp.Header.Get("Retry-After"), time.Now())):
			}
		default:
			return fmt.Errorf("PUT /events: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
		}
	}
}

// retryDelay reads a Retry-After value (seconds or an HTTP date), bounded to [100 ms, 10 s]: a
// demo would rather fail than wait for minutes.
func retryDelay(h string, now time.Time) time.Duration {
	const lo, hi = 100 * time.Millisecond, 10 * time.Second
	d := time.Second
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, lo), hi)
}

// crashGroups asks for the app's crash groups in the default window (all of them, not the
// first page).
func crashGroups(ctx context.Context, hc *http.Client, base, token, app string) ([]group, error) {
	u := base + "/apps/" + url.PathEscape(app) + "/crashGroups?limit=1000"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET crashGroups: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("GET crashGroups: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET crashGroups: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var page struct {
		Results []group `json:"results"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, fmt.Errorf("GET crashGroups: answer is not a group list: %w", err)
	}
	return page.Results, nil
}

// baseURL is the URL a client on this machine reaches a listener at: an address without a
// host, or with a wildcard one, is reached at localhost.
func baseURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "localhost"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return "http://" + host + ":" + port, nil
}
