package sinktest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePort: the port can be bound, and lies below the ephemeral range when the kernel says
// where that starts (so no ":0" listener or outgoing connection can take it meanwhile).
func TestFreePort(t *testing.T) {
	lo, known := ephemeralLow()
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if known && lo > belowEphemeralFrom+1000 && (port < belowEphemeralFrom || port >= lo) {
			t.Fatalf("port %d, want one in [%d, %d)", port, belowEphemeralFrom, lo)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d cannot be bound: %v", port, err)
		}
		l.Close()
	}
}
