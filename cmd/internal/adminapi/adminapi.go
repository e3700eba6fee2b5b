// Package adminapi is a client of a node's operator API (the admin listener's /admin routes):
// `svc admin` and cmd/demo use it.
package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TokenFile is the name of the admin token file in a node's data directory.
const TokenFile = "admin.token"

// ReadToken returns SVC_ADMIN_TOKEN when set, else the token a node keeps in dataDir.
func ReadToken(dataDir string) (string, error) {
	if t := os.Getenv("SVC_ADMIN_TOKEN"); t != "" {
		return t, nil
	}
	b, err := os.ReadFile(filepath.Join(dataDir, TokenFile))
	if err != nil {
		return "", fmt.Errorf("no admin token: set SVC_ADMIN_TOKEN or point --data-dir at the node's data directory (%w)", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// A StatusError is an answer other than 200; Message is the node's {error} text when it sent one.
type StatusError struct {
	Code    int
	Status  string
	Message string
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return e.Status
	}
	return e.Status + ": " + e.Message
}

// Client calls the operator API of the node whose admin listener is at Addr (host:port).
type Client struct {
	Addr  string
	Token string
	HTTP  *http.Client // nil: a client with a 30 s timeout
}

// Post sends body as JSON to path and returns the answer's body when it is 200.
func (c *Client) Post(ctx context.Context, path string, body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.Addr+path, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach admin listener: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		se := &StatusError{Code: resp.StatusCode, Status: resp.Status}
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(out, &e) == nil {
			se.Message = e.Error
		}
		return nil, se
	}
	return out, nil
}

func (c *Client) call(ctx context.Context, path string, body, into any) error {
	out, err := c.Post(ctx, path, body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, into); err != nil {
		return fmt.Errorf("answer of %s is not the expected JSON: %w", path, err)
	}
	return nil
}

// User is the answer of create-user.
type User struct {
	UserID    string `json:"user_id"`
	OwnTeamID string `json:"own_team_id"`
}

// CreateUser creates a user and their own team. A taken email is a *StatusError with Code 409.
func (c *Client) CreateUser(ctx context.Context, email, name string) (User, error) {
	var u User
	return u, c.call(ctx, "/admin/users", map[string]string{"email": email, "name": name}, &u)
}

// App is the answer of create-app.
type App struct {
	AppID  string `json:"app_id"`
	APIKey string `json:"api_key"`
}

// CreateApp creates an app in team.
func (c *Client) CreateApp(ctx context.Context, team, name string) (App, error) {
	var a App
	return a, c.call(ctx, "/admin/apps", map[string]string{"team_id": team, "name": name}, &a)
}

// Tokens is the answer of token: a signed-in session of the user.
type Tokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	SessionID    string `json:"session_id"`
	UserID       string `json:"user_id"`
	OwnTeamID    string `json:"own_team_id"`
}

// SignIn signs the user with email in and returns their tokens (svc admin token).
func (c *Client) SignIn(ctx context.Context, email string) (Tokens, error) {
	var t Tokens
	return t, c.call(ctx, "/admin/tokens", map[string]string{"email": email}, &t)
}
