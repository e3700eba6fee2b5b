package clickhouse

import (
	"context"
	"fmt"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

var _ sinks.Distribution = (*Store)(nil)

// distColumnsSQL are the stored columns of each model.DistAttrs member as (attr, first, second)
// tuples, for an ARRAY JOIN that turns one event row into one row per attribute. The codes
// are model.DistAttr's, our own constants.
var distColumnsSQL = func() string {
	cols := map[model.DistAttr][2]string{
		model.DistAppVersion:  {"app_version", "app_build"},
		model.DistOSVersion:   {"os_name", "os_version"},
		model.DistNetworkType: {"network_type", "''"},
		model.DistLocale:      {"device_locale", "''"},
		model.DistDevice:      {"device_manufacturer", "device_name"},
	}
	s := "["
	for i, attr := range model.DistAttrs {
		if i > 0 {
			s += ", "
		}
		c := cols[attr]
		s += fmt.Sprintf("(toUInt8(%d), %s, %s)", attr, c[0], c[1])
	}
	return s + "]"
}()

// IssueDistribution counts the matching issue events per attribute; see sinks.Distribution.
//
// One query: the window's matching rows (issueFilter) are read once in a subquery, each is
// turned into one row per attribute by ARRAY JOIN (18.16 has no GROUPING SETS), and the
// distinct ids are counted per attribute and stored values, so a replayed row counts once.
// model.Distribution.Add makes the dashboard's keys of the few rows that come back.
func (s *Store) IssueDistribution(ctx context.Context, iq *model.IssueQuery) (model.Distribution, error) {
	out := model.NewDistribution()
	if iq.From >= iq.To {
		return out, nil
	}
	var q query
	q.sql("SELECT tupleElement(k, 1) AS attr, tupleElement(k, 2) AS first, tupleElement(k, 3) AS second, " + distinctSQL("id") +
		" FROM (SELECT id, app_version, app_build, os_name, os_version, network_type, device_locale, device_manufacturer, device_name" +
		" FROM events WHERE ")
	issueFilter(&q, iq)
	q.sql(") ARRAY JOIN " + distColumnsSQL + " AS k GROUP BY attr, first, second")
	err := s.each(ctx, &q, func(scan func(...any) error) error {
		var attr uint8
		var first, second string
		var n uint64
		if err := scan(&attr, &first, &second, &n); err != nil {
			return err
		}
		out.Add(model.DistAttr(attr), first, second, n)
		return nil
	})
	if err != nil {
		return model.Distribution{}, fmt.Errorf("clickhouse: issue distribution of app %s: %w", iq.App, err)
	}
	return out, nil
}
