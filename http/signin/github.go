package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// GitHub signs users in with GitHub's OAuth web flow: the dashboard sends the code GitHub gave
// the browser, and SignIn trades it for a token and reads the user and their emails.
//
// It is plain net/http rather than golang.org/x/oauth2: the exchange is one form POST, GitHub
// answers a bad code with 200 and an error body (which oauth2 folds into the same error type as
// a network failure), and the issue asks for `Accept: application/json`, which oauth2 does not
// send. Doing it by hand keeps the user's fault (ErrRejected) apart from ours (misconfiguration,
// outage).
//
// The zero value is not usable: ClientID and ClientSecret are required. Fields must not change
// while SignIn may run.
type GitHub struct {
	ClientID, ClientSecret string
	OAuthURL               string       // default https://github.com; GitHub Enterprise: https://HOST
	APIURL                 string       // default https://api.github.com; GitHub Enterprise: https://HOST/api/v3
	HTTP                   *http.Client // nil: a default client; a zero Timeout becomes 10 s
}

// GitHub's token-exchange errors that the user (or their code) caused. Every other error code
// (incorrect_client_credentials, redirect_uri_mismatch, application_suspended, ...) means svc's
// OAuth app settings are wrong, which no retry by the user fixes: those are not ErrRejected.
var githubUserErrors = map[string]bool{
	"bad_verification_code": true, // wrong, used or expired code
	"unverified_user_email": true, // the account has no verified email
}

// SignIn exchanges code for an access token and returns the account's identity: its primary
// verified email, its name (or login when it has none) and its numeric id as Subject.
func (g *GitHub) SignIn(ctx context.Context, code string) (Identity, error) {
	if g.ClientID == "" || g.ClientSecret == "" {
		return Identity{}, errors.New("signin: github: client id and secret are not configured")
	}
	if code == "" {
		return Identity{}, fmt.Errorf("%w: github: empty code", ErrRejected)
	}
	client := boundedClient(g.HTTP)
	token, err := g.exchange(ctx, client, code)
	if err != nil {
		return Identity{}, err
	}

	api := strings.TrimSuffix(orDefault(g.APIURL, "https://api.github.com"), "/")
	var user struct {
		ID    int64  `json:"id"`
		Login string `json:"login"`
		Name  string `json:"name"` // null when unset
	}
	if err := githubGet(ctx, client, api+"/user", token, &user); err != nil {
		return Identity{}, err
	}
	if user.ID <= 0 || user.Login == "" {
		return Identity{}, errors.New("signin: github: /user answered without id or login")
	}
	var emails []struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	// GitHub pages this list (30 by default); 100 is its maximum and covers every real account.
	if err := githubGet(ctx, client, api+"/user/emails?per_page=100", token, &emails); err != nil {
		return Identity{}, err
	}
	id := Identity{Name: user.Name, Subject: strconv.FormatInt(user.ID, 10)}
	if id.Name == "" {
		id.Name = user.Login
	}
	for _, e := range emails {
		if e.Primary && e.Verified && e.Email != "" {
			id.Email = e.Email
			break
		}
	}
	if id.Email == "" {
		return Identity{}, fmt.Errorf("%w: github: account %s has no verified primary email", ErrRejected, user.Login)
	}
	return id, nil
}

// exchange trades the code for an access token at {OAuthURL}/login/oauth/access_token.
func (g *GitHub) exchange(ctx context.Context, client *http.Client, code string) (string, error) {
	u := strings.TrimSuffix(orDefault(g.OAuthURL, "https://github.com"), "/") + "/login/oauth/access_token"
	form := url.Values{"client_id": {g.ClientID}, "client_secret": {g.ClientSecret}, "code": {code}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("signin: github: token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := doJSON(client, req, &tok); err != nil {
		return "", fmt.Errorf("signin: github: token exchange: %w", err)
	}
	switch {
	case githubUserErrors[tok.Error]:
		return "", fmt.Errorf("%w: github: %s: %s", ErrRejected, tok.Error, tok.Description)
	case tok.Error != "":
		return "", fmt.Errorf("signin: github: token exchange refused (check the OAuth app settings): %s: %s", tok.Error, tok.Description)
	case tok.AccessToken == "":
		return "", errors.New("signin: github: token exchange answered without access_token")
	}
	return tok.AccessToken, nil
}

// githubGet reads one REST resource with the user's token.
func githubGet(ctx context.Context, client *http.Client, u, token string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("signin: github: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	if err := doJSON(client, req, v); err != nil {
		return fmt.Errorf("signin: github: GET %s: %w", req.URL.Path, err)
	}
	return nil
}

// doJSON sends req and decodes a 200 JSON answer into v. Any other status is an error carrying
// the start of the body, which is where GitHub says what went wrong.
func doJSON(client *http.Client, req *http.Request, v any) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s: %.200s", resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decoding response (Content-Type %q): %w", resp.Header.Get("Content-Type"), err)
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
