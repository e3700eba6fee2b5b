package clickhouse

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// dialer connects as the driver would by itself (TCP, or TLS when the DSN asks for it, within
// the dial timeout) and bounds every write on the connection by timeout. The driver bounds
// reads (ReadTimeout) and watches a batch's context in Send only: the blocks an INSERT sends
// before its last (Flush) would wait forever for a frozen server once the socket's buffers
// were full (TestInsertFrozenServer).
func dialer(o *ch.Options, timeout time.Duration) func(ctx context.Context, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: o.DialTimeout}
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var c net.Conn
		var err error
		if o.TLS != nil {
			c, err = (&tls.Dialer{NetDialer: d, Config: o.TLS}).DialContext(ctx, "tcp", addr)
		} else {
			c, err = d.DialContext(ctx, "tcp", addr)
		}
		if err != nil {
			return nil, err
		}
		return &writeBound{Conn: c, timeout: timeout}, nil
	}
}

// writeBound is a connection whose every Write must finish within timeout, or by the deadline
// the driver set, whichever comes first.
type writeBound struct {
	net.Conn
	timeout time.Duration
	set     atomic.Int64 // the driver's write deadline in Unix nanoseconds; 0 when none
}

func (c *writeBound) SetDeadline(t time.Time) error {
	c.keep(t)
	return c.Conn.SetDeadline(t)
}

func (c *writeBound) SetWriteDeadline(t time.Time) error {
	c.keep(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *writeBound) keep(t time.Time) {
	var n int64
	if !t.IsZero() {
		n = t.UnixNano()
	}
	c.set.Store(n)
}

func (c *writeBound) Write(b []byte) (int, error) {
	d := time.Now().Add(c.timeout)
	if n := c.set.Load(); n != 0 && n < d.UnixNano() {
		d = time.Unix(0, n)
	}
	if err := c.Conn.SetWriteDeadline(d); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
