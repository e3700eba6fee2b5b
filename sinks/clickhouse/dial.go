package clickhouse

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
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
// the driver set, whichever comes first. Between writes the driver's own deadline holds.
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
	set := c.set.Load()
	d := time.Now().Add(c.timeout)
	if set != 0 && set < d.UnixNano() {
		d = time.Unix(0, set)
	}
	if err := c.Conn.SetWriteDeadline(d); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(b)
	// Back to the driver's deadline: TLS may write while it reads (a key update), and must not
	// meet this write's deadline later.
	var was time.Time
	if set != 0 {
		was = time.Unix(0, set)
	}
	if derr := c.Conn.SetWriteDeadline(was); err == nil && derr != nil {
		err = derr
	}
	return n, err
}

// SyscallConn gives the driver the socket under the connection (under TLS too), which it peeks
// at before it reuses a pooled connection: without it the driver took every idle connection
// for healthy, one the server had closed included.
func (c *writeBound) SyscallConn() (syscall.RawConn, error) {
	conn := c.Conn
	if t, ok := conn.(*tls.Conn); ok {
		conn = t.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("clickhouse: the connection has no socket")
	}
	return sc.SyscallConn()
}
