package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/svc-dev/svc/cluster/clusterpb"
)

// Node-level requests: every member runs an actor named nodeName that answers requests sent to
// the member itself rather than to an identity (how many actors it runs, flush now), with the
// Handler given to Serve, and the cluster's own Leave.
const (
	nodeName    = "svc-node"
	hdrDeadline = "svc-deadline" // the asker's deadline, Unix nanoseconds
)

// Handler answers a node request. ctx ends at the asker's deadline or when this node shuts
// down; the handler must return by then. Its messages cross nodes: they must be protobuf types
// linked into every member (a type the receiver does not know breaks the connection between
// the two members, and every message queued on it is lost).
type Handler func(ctx context.Context, msg proto.Message) (proto.Message, error)

// Serve makes this member answer node requests with h (until then it answers with an error).
func (c *Cluster) Serve(h Handler) { c.handler.Store(&h) }

// Result is one member's answer to a node request.
type Result struct {
	Reply proto.Message
	Err   error
}

// AskMember sends msg to the member at address and waits for its handler's reply, until ctx's
// deadline (RequestTimeout without one). A member that is unreachable or leaves meanwhile
// gives an error at once; one that died unnoticed, at the deadline. A request is not sent again.
func (c *Cluster) AskMember(ctx context.Context, address string, msg proto.Message) (proto.Message, error) {
	r := c.ask(ctx, []string{address}, msg)[address]
	return r.Reply, r.Err
}

// AskAll sends msg to every member, this one included, and returns each one's result by
// address once all answered or ctx ended (the missing ones then have ctx's error).
func (c *Cluster) AskAll(ctx context.Context, msg proto.Message) map[string]Result {
	var addrs []string
	for _, m := range c.view.Load().members {
		addrs = append(addrs, m.Address())
	}
	return c.ask(ctx, addrs, msg)
}

func (c *Cluster) ask(ctx context.Context, addrs []string, msg proto.Message) map[string]Result {
	out := make(map[string]Result, len(addrs))
	if c.closed.Load() {
		for _, a := range addrs {
			out[a] = Result{Err: ErrClosed}
		}
		return out
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	dl, _ := ctx.Deadline()
	header := map[string]string{hdrDeadline: strconv.FormatInt(dl.UnixNano(), 10)}
	v := c.view.Load()
	rs := c.newReplies(addrs)
	defer rs.close()
	pending := 0
	for _, a := range addrs {
		if !v.has(a) {
			out[a] = Result{Err: fmt.Errorf("%s is not a member of the cluster", a)}
			continue
		}
		c.sys.AS.Root.Send(actor.NewPID(a, nodeName), &actor.MessageEnvelope{Header: header, Message: msg, Sender: rs.pids[a]})
		pending++
	}
	for pending > 0 {
		select {
		case r := <-rs.ch:
			if _, done := out[r.tag]; done {
				continue
			}
			out[r.tag] = nodeResult(r.tag, r.msg)
			pending--
		case <-ctx.Done():
			for _, a := range addrs {
				if _, done := out[a]; !done {
					out[a] = Result{Err: fmt.Errorf("member %s: %w", a, ctx.Err())}
				}
			}
			pending = 0
		case <-v.changed:
			v = c.view.Load()
			for _, a := range addrs {
				if _, done := out[a]; !done && !v.has(a) {
					out[a] = Result{Err: fmt.Errorf("member %s left the cluster", a)}
					pending--
				}
			}
		}
	}
	return out
}

func nodeResult(addr string, msg any) Result {
	switch m := msg.(type) {
	case *actor.DeadLetterResponse:
		return Result{Err: fmt.Errorf("member %s unreachable", addr)}
	case *clusterpb.NodeError:
		return Result{Err: fmt.Errorf("member %s: %w", addr, errors.New(m.Message))}
	case proto.Message:
		return Result{Reply: m}
	default:
		return Result{Err: fmt.Errorf("member %s: unexpected reply %T", addr, msg)}
	}
}

// nodeActor receives node requests. Each handler call runs in a goroutine of its own, which ends
// when the handler returns, so a slow one does not hold up the others (or a Leave).
type nodeActor struct {
	c *Cluster
}

func (n *nodeActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *clusterpb.Leave:
		n.c.depart(m.MemberId, m.Address)
		ctx.Respond(&clusterpb.LeaveAck{})
	case proto.Message:
		if sender := ctx.Sender(); sender != nil {
			n.c.serve(sender, m, ctx.MessageHeader().Get(hdrDeadline))
		}
	}
}

func (c *Cluster) serve(sender *actor.PID, msg proto.Message, deadline string) {
	h := c.handler.Load()
	if h == nil || c.closed.Load() {
		c.sys.AS.Root.Send(sender, &clusterpb.NodeError{Message: "this member serves no node requests"})
		return
	}
	dl := time.Now().Add(c.cfg.RequestTimeout)
	if ns, err := strconv.ParseInt(deadline, 10, 64); err == nil {
		dl = time.Unix(0, ns)
	}
	ctx, cancel := context.WithDeadline(c.handlerCtx, dl)
	c.asks.Add(1)
	go func() {
		defer c.asks.Done()
		defer cancel()
		reply, err := (*h)(ctx, msg)
		switch {
		case err != nil:
			c.sys.AS.Root.Send(sender, &clusterpb.NodeError{Message: err.Error()})
		case reply == nil:
			c.sys.AS.Root.Send(sender, &clusterpb.NodeError{Message: "the node request handler gave no reply"})
		default:
			c.sys.AS.Root.Send(sender, reply)
		}
	}()
}

// waitAsks waits up to d for handler calls in progress (their context is cancelled by then).
func (c *Cluster) waitAsks(d time.Duration) {
	done := make(chan struct{})
	go func() { // ends when the last handler returns
		c.asks.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		c.log.Warn("node request handlers still running at shutdown")
	}
}

// leave is the graceful part of Shutdown.
func (c *Cluster) leave() {
	start := time.Now()
	deadline := start.Add(c.cfg.LeaveTimeout)
	// While this member still owns its identities, its actors stop after their queued messages
	// and save their state; then it stops placing identities on itself (messages arriving are
	// forwarded to the new owners) and stops those activated meanwhile.
	stopped := c.router.stopAll(deadline)
	c.mu.Lock()
	c.leaving.Store(true)
	selfID := ""
	for _, m := range c.raw {
		if m.Address() == c.cfg.Addr {
			selfID = m.Id
		}
	}
	c.rebuildLocked()
	c.mu.Unlock()
	stopped += c.router.stopAll(deadline)
	// The others rehash without this member now, not at their next member check.
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	told := 0
	for addr, r := range c.AskAll(ctx, &clusterpb.Leave{MemberId: selfID, Address: c.cfg.Addr}) {
		if r.Err != nil {
			c.log.Warn("member not told of leaving", "member", addr, "error", r.Err.Error())
			continue
		}
		told++
	}
	c.log.Info("leaving the cluster", "actors_stopped", stopped, "members_told", told, "took", time.Since(start).Round(time.Millisecond))
}

// replies receives the answers to requests: one process per tag (an identity request has one,
// a node request one per member), all feeding one channel. Unlike a protoactor Future it can be
// waited on with a select, so a request ends with its context.
type replies struct {
	c    *Cluster
	ch   chan tagged
	pids map[string]*actor.PID
}

type tagged struct {
	tag string
	msg any
}

type replyProc struct {
	tag string
	ch  chan<- tagged
}

func (p *replyProc) SendUserMessage(_ *actor.PID, m any) {
	select {
	case p.ch <- tagged{p.tag, actor.UnwrapEnvelopeMessage(m)}:
	default: // a second answer to one request
	}
}
func (p *replyProc) SendSystemMessage(*actor.PID, any) {}
func (p *replyProc) Stop(*actor.PID)                   {}

func (c *Cluster) newReplies(tags []string) *replies {
	rs := &replies{c: c, ch: make(chan tagged, len(tags)), pids: make(map[string]*actor.PID, len(tags))}
	reg := c.sys.AS.ProcessRegistry
	for _, t := range tags {
		pid, _ := reg.Add(&replyProc{tag: t, ch: rs.ch}, "svc-reply"+reg.NextId())
		rs.pids[t] = pid
	}
	return rs
}

func (rs *replies) close() {
	for _, pid := range rs.pids {
		rs.c.sys.AS.ProcessRegistry.Remove(pid)
	}
}
