package dashboard

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/svc-dev/svc/http/httpx"
	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

// addOnboarding adds the app's onboarding to its JSON (sinks.Onboarding sets it from the app's
// accepted batches): onboarded, onboarded_at (null before), os_names (lowercased, in the order
// first seen; [] before). unique_identifier is already there ("" before).
func addOnboarding(m map[string]any, app model.App) {
	names := app.OSNames
	if names == nil {
		names = []string{}
	}
	m["onboarded"], m["onboarded_at"], m["os_names"] = app.Onboarded, ts(app.OnboardedAt), names
}

func (a *API) renameApp(w http.ResponseWriter, r *http.Request) {
	name, ok := decodeName(w, r, "app name")
	if !ok {
		return
	}
	app := appOf(r.Context())
	app.Name, app.UpdatedAt = name, a.now()
	if err := a.Meta.UpdateApp(r.Context(), app); err != nil {
		a.storeErr(w, "rename app", err)
		return
	}
	a.writeApp(w, r, http.StatusOK, app)
}

// rotateKey makes a new API key and revokes every earlier one; ingest refuses them at once.
func (a *API) rotateKey(w http.ResponseWriter, r *http.Request) {
	app := appOf(r.Context())
	k := model.APIKey{AppID: app.ID, Key: model.NewAPIKey(), CreatedAt: a.now()}
	if err := a.Meta.RotateAPIKey(r.Context(), k); err != nil {
		a.storeErr(w, "rotate API key", err)
		return
	}
	if a.Keys != nil {
		a.Keys.Invalidate(app.ID)
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"api_key": keyJSON(k)})
}

func (a *API) getRetention(w http.ResponseWriter, r *http.Request) {
	httpx.JSON(w, http.StatusOK, map[string]int{"retention": appOf(r.Context()).RetentionDays})
}

// Retention bounds in days (spec: 30 to 365).
const (
	MinRetentionDays = 30
	MaxRetentionDays = 365
)

func (a *API) setRetention(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Retention *int `json:"retention"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.Retention == nil || *req.Retention < MinRetentionDays || *req.Retention > MaxRetentionDays {
		httpx.Error(w, http.StatusBadRequest, "retention must be a number of days between 30 and 365")
		return
	}
	app := appOf(r.Context())
	app.RetentionDays, app.UpdatedAt = *req.Retention, a.now()
	if err := a.Meta.UpdateApp(r.Context(), app); err != nil {
		a.storeErr(w, "set retention", err)
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]int{"retention": app.RetentionDays})
}

func (a *API) thresholds(w http.ResponseWriter, r *http.Request) (model.ThresholdPrefs, bool) {
	p, err := a.Meta.ThresholdPrefs(r.Context(), appOf(r.Context()).ID)
	if errors.Is(err, sinks.ErrNotFound) {
		return model.DefaultThresholdPrefs(), true
	}
	if err != nil {
		a.internal(w, "read thresholds", err)
		return p, false
	}
	return p, true
}

func (a *API) getThresholds(w http.ResponseWriter, r *http.Request) {
	if p, ok := a.thresholds(w, r); ok {
		httpx.JSON(w, http.StatusOK, p)
	}
}

// setThresholds applies the members sent over the current thresholds.
func (a *API) setThresholds(w http.ResponseWriter, r *http.Request) {
	p, ok := a.thresholds(w, r)
	if !ok || !decode(w, r, &p) {
		return
	}
	switch {
	case p.ErrorGoodThreshold < 0 || p.ErrorGoodThreshold > 100 || p.ErrorCautionThreshold < 0 || p.ErrorCautionThreshold > 100:
		httpx.Error(w, http.StatusBadRequest, "error_good_threshold and error_caution_threshold are percentages between 0 and 100")
		return
	case p.ErrorCautionThreshold > p.ErrorGoodThreshold:
		httpx.Error(w, http.StatusBadRequest, "error_caution_threshold must not exceed error_good_threshold")
		return
	case p.ErrorSpikeMinCountThreshold < 0:
		httpx.Error(w, http.StatusBadRequest, "error_spike_min_count_threshold must not be negative")
		return
	case p.ErrorSpikeMinRateThreshold < 0 || p.ErrorSpikeMinRateThreshold > 100:
		httpx.Error(w, http.StatusBadRequest, "error_spike_min_rate_threshold is a percentage between 0 and 100")
		return
	}
	app := appOf(r.Context()).ID
	if err := a.Meta.SetThresholdPrefs(r.Context(), app, p, a.now()); err != nil {
		a.storeErr(w, "set thresholds", err)
		return
	}
	if a.OnThresholds != nil {
		a.OnThresholds(app, p)
	}
	httpx.JSON(w, http.StatusOK, p)
}

// appConfig is an app's configuration as the dashboard reads and writes it: the SDK
// configuration GET /config serves and the extra settings it does not serve (the SDKs of the
// ingestion contract do not read them), in one flat object.
type appConfig struct {
	model.SDKConfig
	model.SDKConfigExtra
}

// extras returns the metadata store's extra settings, answering 500 when it keeps none.
func (a *API) extras(w http.ResponseWriter) (sinks.SDKConfigExtras, bool) {
	x, ok := a.Meta.(sinks.SDKConfigExtras)
	if !ok {
		httpx.Error(w, http.StatusInternalServerError, "this metadata store does not keep the extra SDK settings")
	}
	return x, ok
}

// appConfigOf reads the app's configuration, with the defaults for what was never set.
func (a *API) appConfigOf(w http.ResponseWriter, r *http.Request) (appConfig, bool) {
	x, ok := a.extras(w)
	if !ok {
		return appConfig{}, false
	}
	id := appOf(r.Context()).ID
	c, _, err := a.Meta.SDKConfig(r.Context(), id)
	if errors.Is(err, sinks.ErrNotFound) {
		c, err = model.DefaultSDKConfig(), nil
	}
	if err != nil {
		a.internal(w, "read SDK configuration", err)
		return appConfig{}, false
	}
	e, _, err := x.SDKConfigExtra(r.Context(), id)
	if errors.Is(err, sinks.ErrNotFound) {
		e, err = model.DefaultSDKConfigExtra(), nil
	}
	if err != nil {
		a.internal(w, "read SDK configuration", err)
		return appConfig{}, false
	}
	return appConfig{c, e}, true
}

func (a *API) getConfig(w http.ResponseWriter, r *http.Request) {
	if c, ok := a.appConfigOf(w, r); ok {
		httpx.JSON(w, http.StatusOK, c)
	}
}

// setConfig applies the members sent over the current configuration, checks every bound, and
// stores the part that changed: the SDK configuration (GET /config then serves it with a new
// ETag), the extra settings, or both.
func (a *API) setConfig(w http.ResponseWriter, r *http.Request) {
	c, ok := a.appConfigOf(w, r)
	if !ok {
		return
	}
	// Decoding reuses the lists' arrays, so what was stored is compared as encoded before.
	sdkBefore, err1 := json.Marshal(c.SDKConfig)
	extraBefore, err2 := json.Marshal(c.SDKConfigExtra)
	if err := errors.Join(err1, err2); err != nil {
		a.internal(w, "encode SDK configuration", err)
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 256<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		bodyError(w, err, "malformed SDK configuration")
		return
	}
	if err := c.SDKConfig.Validate(); err != nil {
		httpx.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := c.SDKConfigExtra.Validate(); err != nil {
		httpx.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	x := a.Meta.(sinks.SDKConfigExtras) // appConfigOf checked it
	id, now := appOf(r.Context()).ID, a.now()
	if b, err := json.Marshal(c.SDKConfigExtra); err != nil || !bytes.Equal(b, extraBefore) {
		if err := x.SetSDKConfigExtra(r.Context(), id, c.SDKConfigExtra, now); err != nil {
			a.storeErr(w, "set SDK configuration", err)
			return
		}
	}
	if b, err := json.Marshal(c.SDKConfig); err != nil || !bytes.Equal(b, sdkBefore) {
		if err := a.Meta.SetSDKConfig(r.Context(), id, c.SDKConfig, now); err != nil {
			a.storeErr(w, "set SDK configuration", err)
			return
		}
	}
	httpx.JSON(w, http.StatusOK, c)
}

// ShortFilterCode is the deterministic code of a filter combination: lowercase hex MD5 of the
// app id and the normalised filters (docs/architecture.md, "Algorithms").
func ShortFilterCode(app string, normalised []byte) string {
	h := md5.New()
	h.Write([]byte(app))
	h.Write(normalised)
	return hex.EncodeToString(h.Sum(nil))
}

// createShortFilter stores a filter combination under its code: {filters: {...}} →
// {filter_short_code}. Normalising (re-encoding with sorted keys) makes the code independent of
// member order and spacing.
func (a *API) createShortFilter(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Filters map[string]any `json:"filters"`
	}
	if !decode(w, r, &req) {
		return
	}
	if len(req.Filters) == 0 {
		httpx.Error(w, http.StatusBadRequest, `send {"filters": {...}} with at least one filter`)
		return
	}
	norm, err := json.Marshal(req.Filters) // encoding/json sorts map keys
	if err != nil {
		httpx.Error(w, http.StatusBadRequest, "filters: "+err.Error())
		return
	}
	app := appOf(r.Context())
	f := model.ShortFilter{Code: ShortFilterCode(app.ID.String(), norm), AppID: app.ID, Filters: norm, CreatedAt: a.now()}
	if err := a.Meta.PutShortFilter(r.Context(), f); err != nil {
		a.storeErr(w, "store short filter", err)
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]string{"filter_short_code": f.Code})
}
