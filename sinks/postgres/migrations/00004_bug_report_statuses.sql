-- Bug reports' statuses (sinks.BugReportStatuses): the one part of a bug report that changes
-- after it was sent. The reports themselves are events in the event store; a report without a
-- row here is open.

-- +goose Up
CREATE TABLE bug_report_statuses (
    app_id     uuid        NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    -- The report's event id. No foreign key: events live in another store.
    report_id  uuid        NOT NULL,
    -- 0 open, 1 closed.
    status     smallint    NOT NULL CHECK (status IN (0, 1)),
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (app_id, report_id)
);
-- ClosedBugReports reads the closed ids of one app, in id order, from this index alone.
CREATE INDEX bug_report_statuses_closed_idx ON bug_report_statuses (app_id, report_id) WHERE status = 1;

-- +goose Down
DROP TABLE bug_report_statuses;
