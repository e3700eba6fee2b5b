package badgerevents

import (
	"context"
	"fmt"

	"github.com/svc-dev/svc/model"
	"github.com/svc-dev/svc/sinks"
)

var _ sinks.Distribution = (*Store)(nil)

// IssueDistribution counts the matching issue events per attribute; see sinks.Distribution.
// One scan of the window counts by stored column values (interned, as IssueCells keeps its
// keys: a count is found through an index so that no map key ever aliases a row), and
// model.Distribution.Add turns them into the dashboard's keys at the end.
func (s *Store) IssueDistribution(ctx context.Context, q *model.IssueQuery) (model.Distribution, error) {
	out := model.NewDistribution()
	if q.From >= q.To {
		return out, nil
	}
	type key struct {
		attr          model.DistAttr
		first, second string
	}
	idx := map[key]int{}
	var keys []key
	var counts []uint64
	strs := interner{}
	var v rowView
	err := s.scanView(ctx, q.App, window{lo: q.From, hi: q.To, issues: true}, func(ts int64, id, val []byte) (bool, error) {
		if ok, err := v.issueMatch(ts, id, val, q); !ok {
			return err == nil, err
		}
		for _, attr := range model.DistAttrs {
			first, second := attr.Parts(&v.e.Attribute)
			k := key{attr, first, second}
			i, ok := idx[k]
			if !ok {
				k.first, k.second = strs.get(first), strs.get(second)
				i = len(keys)
				idx[k] = i
				keys, counts = append(keys, k), append(counts, 0)
			}
			counts[i]++
		}
		return true, nil
	})
	if err != nil {
		return model.Distribution{}, fmt.Errorf("badgerevents: issue distribution of app %s: %w", q.App, err)
	}
	for i, k := range keys {
		out.Add(k.attr, k.first, k.second, counts[i])
	}
	return out, nil
}
