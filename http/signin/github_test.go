package signin_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/svc-dev/svc/http/signin"
	"github.com/svc-dev/svc/http/signin/signintest"
)

// outcome is what a sign-in must end in.
type outcome int

const (
	ok       outcome = iota
	rejected         // errors.Is(err, signin.ErrRejected): the handler answers 400
	failed           // any other error: the handler answers 500/503
)

func (o outcome) String() string { return [...]string{"ok", "rejected", "failed"}[o] }

// check fails t unless err is the wanted outcome.
func check(t *testing.T, err error, want outcome) {
	t.Helper()
	var got outcome
	switch {
	case err == nil:
		got = ok
	case errors.Is(err, signin.ErrRejected):
		got = rejected
	default:
		got = failed
	}
	if got != want {
		t.Fatalf("outcome %v (err %v), want %v", got, err, want)
	}
}

func TestGitHubSignIn(t *testing.T) {
	ada := signintest.GitHubUser{
		ID: 583231, Login: "ada", Name: "Ada Lovelace",
		Emails: []signintest.GitHubEmail{
			{Email: "ada@old.example", Verified: true},
			{Email: "ada@example.com", Primary: true, Verified: true},
		},
	}
	noName := ada
	noName.Name = ""
	unverifiedPrimary := ada
	unverifiedPrimary.Emails = []signintest.GitHubEmail{
		{Email: "ada@example.com", Primary: true},
		{Email: "ada@old.example", Verified: true},
	}
	noEmails := ada
	noEmails.Emails = nil

	tests := []struct {
		name   string
		user   *signintest.GitHubUser // registered under code "good" when set
		code   string
		client func(gh *signintest.GitHub) *signin.GitHub // nil: the right settings
		before func(t *testing.T, gh *signintest.GitHub, c *signin.GitHub)
		want   outcome
		wantID signin.Identity
	}{
		{name: "success", user: &ada, code: "good", want: ok,
			wantID: signin.Identity{Email: "ada@example.com", Name: "Ada Lovelace", Subject: "583231"}},
		{name: "name falls back to login", user: &noName, code: "good", want: ok,
			wantID: signin.Identity{Email: "ada@example.com", Name: "ada", Subject: "583231"}},
		{name: "bad code", user: &ada, code: "bad", want: rejected},
		{name: "empty code", user: &ada, code: "", want: rejected},
		{name: "code used twice", user: &ada, code: "good", want: rejected,
			before: func(t *testing.T, _ *signintest.GitHub, c *signin.GitHub) {
				if _, err := c.SignIn(context.Background(), "good"); err != nil {
					t.Fatalf("first use: %v", err)
				}
			}},
		{name: "no verified primary email", user: &unverifiedPrimary, code: "good", want: rejected},
		{name: "no emails", user: &noEmails, code: "good", want: rejected},
		{name: "wrong client secret is our misconfiguration", user: &ada, code: "good", want: failed,
			client: func(gh *signintest.GitHub) *signin.GitHub {
				return &signin.GitHub{ClientID: gh.ClientID(), ClientSecret: "wrong", OAuthURL: gh.URL(), APIURL: gh.URL()}
			}},
		{name: "client not configured", user: &ada, code: "good", want: failed,
			client: func(gh *signintest.GitHub) *signin.GitHub {
				return &signin.GitHub{OAuthURL: gh.URL(), APIURL: gh.URL()}
			}},
		{name: "provider down", user: &ada, code: "good", want: failed,
			before: func(_ *testing.T, gh *signintest.GitHub, _ *signin.GitHub) { gh.Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gh := signintest.NewGitHub(t)
			if tc.user != nil {
				gh.AddUser("good", *tc.user)
			}
			c := &signin.GitHub{ClientID: gh.ClientID(), ClientSecret: gh.ClientSecret(), OAuthURL: gh.URL(), APIURL: gh.URL()}
			if tc.client != nil {
				c = tc.client(gh)
			}
			if tc.before != nil {
				tc.before(t, gh, c)
			}
			id, err := c.SignIn(context.Background(), tc.code)
			check(t, err, tc.want)
			if id != tc.wantID {
				t.Fatalf("identity %+v, want %+v", id, tc.wantID)
			}
		})
	}
}

// TestGitHubMisbehaving: a provider that answers nonsense, too much, or too slowly is an outage
// (not ErrRejected), and SignIn returns instead of waiting or reading without bound.
func TestGitHubMisbehaving(t *testing.T) {
	const tokenOK = `{"access_token":"gho_x","token_type":"bearer","scope":"user:email"}`
	const userOK = `{"id":1,"login":"ada","name":null}`
	const emailsOK = `[{"email":"ada@example.com","primary":true,"verified":true}]`
	huge := `{"id":1,"login":"ada","name":"` + strings.Repeat("a", 2<<20) + `"}`
	tests := []struct {
		name                string
		token, user, emails string
		status              int // of /user; 0: 200
		slow                bool
		wantInErr           string
	}{
		{name: "token endpoint answers HTML", token: "<html>Unicorn!</html>", user: userOK, emails: emailsOK, wantInErr: "decoding"},
		{name: "token answer without access_token", token: `{"token_type":"bearer"}`, user: userOK, emails: emailsOK, wantInErr: "without access_token"},
		{name: "user 500", token: tokenOK, user: `{"message":"Server Error"}`, status: 500, emails: emailsOK, wantInErr: "500"},
		{name: "user without id", token: tokenOK, user: `{"login":"ada"}`, emails: emailsOK, wantInErr: "without id"},
		{name: "user body over 1 MiB", token: tokenOK, user: huge, emails: emailsOK, wantInErr: "larger than"},
		{name: "emails not a list", token: tokenOK, user: userOK, emails: `{"message":"Not Found"}`, wantInErr: "decoding"},
		{name: "provider too slow", token: tokenOK, user: userOK, emails: emailsOK, slow: true, wantInErr: "deadline"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
				if tc.slow {
					// With the body read, the server notices the client hanging up.
					_ = r.ParseForm()
					select {
					case <-r.Context().Done():
					case <-time.After(5 * time.Second):
					}
					return
				}
				fmt.Fprint(w, tc.token)
			})
			mux.HandleFunc("GET /user", func(w http.ResponseWriter, _ *http.Request) {
				if tc.status != 0 {
					w.WriteHeader(tc.status)
				}
				fmt.Fprint(w, tc.user)
			})
			mux.HandleFunc("GET /user/emails", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, tc.emails) })
			srv := httptest.NewServer(mux)
			defer srv.Close()

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if tc.slow {
				ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
			}
			c := &signin.GitHub{ClientID: "id", ClientSecret: "secret", OAuthURL: srv.URL, APIURL: srv.URL}
			_, err := c.SignIn(ctx, "code")
			check(t, err, failed)
			if !strings.Contains(err.Error(), tc.wantInErr) {
				t.Fatalf("error %q does not mention %q", err, tc.wantInErr)
			}
		})
	}
}

func BenchmarkGitHubSignIn(b *testing.B) {
	gh := signintest.NewGitHub(b)
	c := &signin.GitHub{ClientID: gh.ClientID(), ClientSecret: gh.ClientSecret(), OAuthURL: gh.URL(), APIURL: gh.URL()}
	u := signintest.GitHubUser{ID: 1, Login: "ada", Emails: []signintest.GitHubEmail{{Email: "ada@example.com", Primary: true, Verified: true}}}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		code := fmt.Sprint("code-", i)
		gh.AddUser(code, u)
		if _, err := c.SignIn(ctx, code); err != nil {
			b.Fatal(err)
		}
	}
}
