package clickhouse

import "time"

// SetClock replaces the store's clock (time.Now) for the external tests.
func SetClock(s *Store, clock func() time.Time) { s.clock = clock }

// SetBlockRows sets how many rows the store's INSERTs send per block, for the external tests.
func SetBlockRows(s *Store, n int) { s.blockRows = n }
