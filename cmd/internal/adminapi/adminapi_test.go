package adminapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, TokenFile), []byte("  tok-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		env, dir, want string
		bad            bool
	}{
		{dir: dir, want: "tok-from-file"},
		{env: "tok-from-env", dir: dir, want: "tok-from-env"},
		{dir: t.TempDir(), bad: true},
	} {
		t.Setenv("SVC_ADMIN_TOKEN", tt.env)
		got, err := ReadToken(tt.dir)
		if got != tt.want || (err != nil) != tt.bad {
			t.Errorf("env %q: %q, %v; want %q (error %v)", tt.env, got, err, tt.want, tt.bad)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error does not wrap the cause: %v", err)
		}
	}
}

func TestClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"admin token missing or wrong"}`))
			return
		}
		switch r.URL.Path {
		case "/admin/users":
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"error":"a user with email a@b.c exists already"}`))
		case "/admin/apps":
			w.Write([]byte(`{"app_id":"app","api_key":"key"}`))
		case "/admin/tokens":
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte(`<html>`))
		default:
			w.Write([]byte(`not json`))
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	c := &Client{Addr: addr, Token: "good"}

	a, err := c.CreateApp(ctx, "team", "name")
	if err != nil || a != (App{AppID: "app", APIKey: "key"}) {
		t.Errorf("CreateApp = %+v, %v", a, err)
	}
	var se *StatusError
	if _, err := c.CreateUser(ctx, "a@b.c", "A"); !errors.As(err, &se) || se.Code != 409 || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("CreateUser: %v", err)
	}
	if _, err := c.SignIn(ctx, "a@b.c"); !errors.As(err, &se) || se.Code != 502 || se.Message != "" || err.Error() != "502 Bad Gateway" {
		t.Errorf("SignIn: %v", err)
	}
	if _, err := (&Client{Addr: addr, Token: "bad"}).CreateApp(ctx, "t", "n"); !errors.As(err, &se) || se.Code != 401 {
		t.Errorf("wrong token: %v", err)
	}
	var u User
	if err := c.call(ctx, "/other", nil, &u); err == nil || !strings.Contains(err.Error(), "not the expected JSON") {
		t.Errorf("a non-JSON answer: %v", err)
	}
	srv.Close()
	if _, err := c.Post(ctx, "/admin/apps", nil); err == nil || !strings.Contains(err.Error(), "reach admin listener") {
		t.Errorf("no listener: %v", err)
	}
}
