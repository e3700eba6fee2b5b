package httpx

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
)

// JSONErrorListener wraps ln so that the answers net/http writes by itself, before any handler
// runs (431 for headers over the server's limit, 400 for a malformed request, 501 for an
// unknown transfer encoding), carry the `{"error": ...}` body every other answer of svc has,
// instead of plain text. Everything else passes through untouched.
func JSONErrorListener(ln net.Listener) net.Listener { return jsonErrorListener{ln} }

type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorConn{Conn: c}, nil
}

type jsonErrorConn struct{ net.Conn }

// cannedHeaders follow the status line of net/http's own error answers; no handler's answer
// has them there (handlers' answers carry Date and Content-Length first).
var cannedHeaders = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")

func (c *jsonErrorConn) Write(p []byte) (int, error) {
	if len(p) < 12 || p[0] != 'H' || !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return c.Conn.Write(p)
	}
	end := bytes.Index(p, []byte("\r\n"))
	if end < 0 || !bytes.HasPrefix(p[end:], cannedHeaders) {
		return c.Conn.Write(p)
	}
	msg, _ := json.Marshal(map[string]string{"error": string(p[end+len(cannedHeaders):])})
	msg = append(msg, '\n')
	out := make([]byte, 0, end+len(msg)+128)
	out = append(out, p[:end]...)
	out = append(out, "\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(msg)), 10)
	out = append(out, "\r\n\r\n"...)
	out = append(out, msg...)
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite keeps the half-close net/http uses after a 431 (it waits for the client to stop
// sending before it closes).
func (c *jsonErrorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
