package clickhouse

import "time"

// SetClock replaces the store's clock (time.Now) for the external tests.
func SetClock(s *Store, clock func() time.Time) { s.clock = clock }
