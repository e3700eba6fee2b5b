package badgermeta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// thresholdsRec is a stored ThresholdPrefs and when it was set.
type thresholdsRec struct {
	Prefs model.ThresholdPrefs
	At    time.Time
}

// percent reports whether v is in 0..100 (false for NaN).
func percent(v float64) bool { return v >= 0 && v <= 100 }

func checkThresholds(p model.ThresholdPrefs) error {
	switch {
	case !percent(p.ErrorGoodThreshold) || !percent(p.ErrorCautionThreshold):
		return fmt.Errorf("badgermeta: thresholds good %v and caution %v must be in 0..100: %w", p.ErrorGoodThreshold, p.ErrorCautionThreshold, sinks.ErrInvalid)
	case p.ErrorCautionThreshold > p.ErrorGoodThreshold:
		return fmt.Errorf("badgermeta: caution threshold %v is above good threshold %v: %w", p.ErrorCautionThreshold, p.ErrorGoodThreshold, sinks.ErrInvalid)
	case p.ErrorSpikeMinCountThreshold < 0:
		return fmt.Errorf("badgermeta: spike minimum count %d is negative: %w", p.ErrorSpikeMinCountThreshold, sinks.ErrInvalid)
	case !percent(p.ErrorSpikeMinRateThreshold):
		return fmt.Errorf("badgermeta: spike minimum rate %v must be in 0..100: %w", p.ErrorSpikeMinRateThreshold, sinks.ErrInvalid)
	}
	return nil
}

func (s *Store) ThresholdPrefs(ctx context.Context, appID uuid.UUID) (model.ThresholdPrefs, error) {
	var rec thresholdsRec
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pThresholds, appID[:]), &rec, "thresholds of app "+appID.String())
	})
	return rec.Prefs, err
}

func (s *Store) SetThresholdPrefs(ctx context.Context, appID uuid.UUID, p model.ThresholdPrefs, at time.Time) error {
	if err := checkThresholds(p); err != nil {
		return err
	}
	rec := thresholdsRec{Prefs: p, At: at.UTC()}
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, appID[:]), "app "+appID.String()); err != nil {
			return err
		}
		return set(txn, key(pThresholds, appID[:]), rec)
	})
}

// validCode reports whether code is 32 lowercase hex digits, the form of an MD5 sum.
func validCode(code string) bool {
	if len(code) != 32 {
		return false
	}
	for i := 0; i < len(code); i++ {
		if c := code[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// checkShortFilter refuses a code that is not an MD5 sum in hex and filters that are not one
// JSON object in UTF-8 (what Postgres's json type accepts).
func checkShortFilter(f model.ShortFilter) error {
	if !validCode(f.Code) {
		return fmt.Errorf("badgermeta: short filter code %q is not 32 lowercase hex digits: %w", f.Code, sinks.ErrInvalid)
	}
	trimmed := bytes.TrimLeft(f.Filters, " \t\r\n")
	if !utf8.Valid(f.Filters) || !json.Valid(f.Filters) || len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("badgermeta: filters of short filter %s are not a JSON object: %w", f.Code, sinks.ErrInvalid)
	}
	return nil
}

// PutShortFilter keeps the first put of a code: a repeat with the same filters changes
// nothing (CreatedAt included), one with other filters is ErrConflict.
func (s *Store) PutShortFilter(ctx context.Context, f model.ShortFilter) error {
	if err := checkShortFilter(f); err != nil {
		return err
	}
	f.CreatedAt = f.CreatedAt.UTC()
	k := key(pShortFilter, f.AppID[:], []byte(f.Code))
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pApp, f.AppID[:]), "app "+f.AppID.String()); err != nil {
			return err
		}
		var stored model.ShortFilter
		err := get(txn, k, &stored, "short filter "+f.Code)
		switch {
		case err == nil && bytes.Equal(stored.Filters, f.Filters):
			return nil
		case err == nil:
			return fmt.Errorf("badgermeta: short filter %s of app %s stands for other filters: %w", f.Code, f.AppID, sinks.ErrConflict)
		case !errors.Is(err, sinks.ErrNotFound):
			return err
		}
		return set(txn, k, f)
	})
}

// ShortFilter answers ErrNotFound for a code of the wrong form: no such code can be stored.
func (s *Store) ShortFilter(ctx context.Context, appID uuid.UUID, code string) (model.ShortFilter, error) {
	what := "short filter " + code + " of app " + appID.String()
	if !validCode(code) {
		return model.ShortFilter{}, fmt.Errorf("badgermeta: %s: %w", what, sinks.ErrNotFound)
	}
	var f model.ShortFilter
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pShortFilter, appID[:], []byte(code)), &f, what)
	})
	return f, err
}

// checkWebhook refuses a URL that is not absolute http(s) with a host.
func checkWebhook(raw string) error {
	if err := checkText("webhook URL", raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("badgermeta: webhook URL: %w: %w", sinks.ErrInvalid, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("badgermeta: webhook URL %q is not an absolute http(s) URL: %w", raw, sinks.ErrInvalid)
	}
	return nil
}

func (s *Store) ChatApp(ctx context.Context, teamID uuid.UUID) (model.ChatApp, error) {
	var c model.ChatApp
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, key(pChatApp, teamID[:]), &c, "chat app of team "+teamID.String())
	})
	return c, err
}

func (s *Store) SetChatApp(ctx context.Context, c model.ChatApp) error {
	if err := checkWebhook(c.WebhookURL); err != nil {
		return err
	}
	c.UpdatedAt = c.UpdatedAt.UTC()
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := mustExist(txn, key(pTeam, c.TeamID[:]), "team "+c.TeamID.String()); err != nil {
			return err
		}
		return set(txn, key(pChatApp, c.TeamID[:]), c)
	})
}
