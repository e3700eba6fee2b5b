-- Every change to what SessionAppRole reads (a sign-in session, an app, a membership) is
-- announced on the channel svc_access, so that nodes keeping its answers in memory
-- (postgres.Options.AccessCache) drop them at once. The payload names what changed:
--   s<session id>            a session was rotated or deleted
--   a<app id>                an app was changed or deleted
--   m<team id>/<user id>     a membership's role was changed or the membership deleted
--   *                        a table was truncated: everything
-- Inserts need no notice: an answer is kept only for a session, an app and a membership that
-- existed. Updates that change nothing (an onboarding mark already made) send none.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION svc_access_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_LEVEL = 'STATEMENT' THEN
        PERFORM pg_notify('svc_access', '*');
    ELSIF TG_TABLE_NAME = 'auth_sessions' THEN
        PERFORM pg_notify('svc_access', 's' || OLD.id::text);
    ELSIF TG_TABLE_NAME = 'apps' THEN
        PERFORM pg_notify('svc_access', 'a' || OLD.id::text);
    ELSIF TG_TABLE_NAME = 'team_members' THEN
        PERFORM pg_notify('svc_access', 'm' || OLD.team_id::text || '/' || OLD.user_id::text);
    ELSE
        PERFORM pg_notify('svc_access', '*');
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER svc_access_sessions_update AFTER UPDATE ON auth_sessions
    FOR EACH ROW WHEN (OLD IS DISTINCT FROM NEW) EXECUTE FUNCTION svc_access_changed();
CREATE TRIGGER svc_access_sessions_delete AFTER DELETE ON auth_sessions
    FOR EACH ROW EXECUTE FUNCTION svc_access_changed();
CREATE TRIGGER svc_access_sessions_truncate AFTER TRUNCATE ON auth_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION svc_access_changed();
CREATE TRIGGER svc_access_apps_update AFTER UPDATE ON apps
    FOR EACH ROW WHEN (OLD IS DISTINCT FROM NEW) EXECUTE FUNCTION svc_access_changed();
CREATE TRIGGER svc_access_apps_delete AFTER DELETE ON apps
    FOR EACH ROW EXECUTE FUNCTION svc_access_changed();
CREATE TRIGGER svc_access_apps_truncate AFTER TRUNCATE ON apps
    FOR EACH STATEMENT EXECUTE FUNCTION svc_access_changed();
CREATE TRIGGER svc_access_members_update AFTER UPDATE ON team_members
    FOR EACH ROW WHEN (OLD IS DISTINCT FROM NEW) EXECUTE FUNCTION svc_access_changed();
CREATE TRIGGER svc_access_members_delete AFTER DELETE ON team_members
    FOR EACH ROW EXECUTE FUNCTION svc_access_changed();
CREATE TRIGGER svc_access_members_truncate AFTER TRUNCATE ON team_members
    FOR EACH STATEMENT EXECUTE FUNCTION svc_access_changed();

-- +goose Down
DROP TRIGGER svc_access_members_truncate ON team_members;
DROP TRIGGER svc_access_members_delete ON team_members;
DROP TRIGGER svc_access_members_update ON team_members;
DROP TRIGGER svc_access_apps_truncate ON apps;
DROP TRIGGER svc_access_apps_delete ON apps;
DROP TRIGGER svc_access_apps_update ON apps;
DROP TRIGGER svc_access_sessions_truncate ON auth_sessions;
DROP TRIGGER svc_access_sessions_delete ON auth_sessions;
DROP TRIGGER svc_access_sessions_update ON auth_sessions;
DROP FUNCTION svc_access_changed();
