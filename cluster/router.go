package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/proto"

	"github.com/svc-dev/svc/actors"
	"github.com/svc-dev/svc/cluster/clusterpb"
)

// Every member runs a router: a process (no mailbox) named routerName that keeps the live
// actors of the identities this member owns, like actors.LocalDirectory does on one node.
// Messages for an identity go to its owner's router, with the kind and identity in headers; the
// router hands them to the actor, activating one when there is none.
//
// An identity has at most one actor on a member at a time. An actor stopped (passivated, moved
// by a rehash) first handles the messages queued for it before its stop; messages for its
// identity that come meanwhile wait in the router, and go to a new actor once the old one has
// stopped (and saved its state): spawning the new one at once would let both run side by side,
// the new one handling later messages before the old one's queued ones, and reading the state
// before the old one saved it.
//
// Why not protoactor's placement (disthash's partition actor, reached with cluster.Request):
// other members cache the PID of an activation, and nothing clears those caches when it
// passivates, so a message sent afterwards from another member is dropped without an error (a
// request is retried, a tell is lost for good). With the owner's router in between, no member
// but the owner ever holds an actor's PID, and passivation works as in LocalDirectory: the
// next message after it activates a fresh actor.
const (
	routerName = "svc-directory"
	hdrKind    = "svc-kind"
	hdrID      = "svc-id"
	hdrHops    = "svc-hops"
	maxHops    = 3 // forwards of one message by leaving members
)

// ErrClosed is returned by requests on a cluster that was shut down.
var ErrClosed = errors.New("cluster: shut down")

const shards = 64

type kindState struct {
	kind   actors.Kind
	props  *actor.Props // the cluster kind's props: an activation wrapping the producer
	shards [shards]shard
}

type shard struct {
	mu  sync.Mutex
	ids actors.Identities
}

var seed = maphash.MakeSeed()

func (ks *kindState) shard(identity string) *shard {
	return &ks.shards[maphash.String(seed, identity)%shards]
}

type router struct {
	c *Cluster
}

var _ actor.Process = (*router)(nil)

// SendUserMessage takes a message another member's router or directory sent here.
func (r *router) SendUserMessage(_ *actor.PID, message any) {
	env, ok := message.(*actor.MessageEnvelope)
	if !ok || env.Header == nil {
		r.c.log.Warn("router: message without kind and identity dropped", "type", fmt.Sprintf("%T", actor.UnwrapEnvelopeMessage(message)))
		return
	}
	hops, _ := strconv.Atoi(env.Header.Get(hdrHops))
	r.route(actors.Kind(env.Header.Get(hdrKind)), env.Header.Get(hdrID), env.Message, env.Sender, hops)
}

func (r *router) SendSystemMessage(*actor.PID, any) {}
func (r *router) Stop(*actor.PID)                   {}

// route delivers msg to the identity's actor here, or forwards it to the owner. A message that
// came from another member is not forwarded again (unless this member is leaving): when the
// two members' views of the cluster differ for a moment, nobody knows which is newer, and
// forwarding could pass it back and forth or on to a member this one has not yet seen die.
// It is delivered here; if another member owns the identity in this member's view, its actor
// is checked again a little later and stopped if that is still so (see deliver), so it does not
// live on beside the owner's.
func (r *router) route(kind actors.Kind, identity string, msg any, sender *actor.PID, hops int) {
	ks := r.c.kinds[kind]
	if ks == nil {
		r.c.log.Warn("router: message for a kind this member does not host dropped", "kind", kind, "identity", identity)
		if sender != nil {
			r.c.sys.AS.Root.Send(sender, &clusterpb.NodeError{Message: fmt.Sprintf("member %s does not host kind %q", r.c.cfg.Addr, kind)})
		}
		return
	}
	owner := r.c.owner(kind, identity)
	if owner != "" && owner != r.c.cfg.Addr && hops < maxHops && (hops == 0 || r.c.leaving.Load()) {
		r.forward(owner, kind, identity, msg, sender, hops+1)
		return
	}
	r.deliver(ks, identity, msg, sender, owner == "" || owner == r.c.cfg.Addr)
}

// forward sends msg to owner's router. hops counts the sends between members so far, this one
// included: 1 from the member where Tell or Request was called.
func (r *router) forward(owner string, kind actors.Kind, identity string, msg any, sender *actor.PID, hops int) {
	r.c.sys.AS.Root.Send(actor.NewPID(owner, routerName), &actor.MessageEnvelope{
		Header:  map[string]string{hdrKind: string(kind), hdrID: identity, hdrHops: strconv.Itoa(hops)},
		Message: msg,
		Sender:  sender,
	})
}

// deliver hands msg to the identity's actor on this member, spawning it when there is none,
// or holds it while the identity's previous actor is still stopping (see stopped). The shard
// lock orders messages with activation and passivation. An actor spawned for an identity this
// member does not own (owned false) gets the messages that follow too, in order, until
// strayCheck later: if this member does not own it by then either, it stops as on a rehash.
func (r *router) deliver(ks *kindState, identity string, msg any, sender *actor.PID, owned bool) {
	if sender != nil {
		msg = &actor.MessageEnvelope{Message: msg, Sender: sender}
	}
	sh := ks.shard(identity)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.ids.Send(r.c.sys.AS.Root, identity, msg, r.spawner(ks, identity, owned))
}

// spawner starts the identity's actor on this member (called with the shard's lock held).
func (r *router) spawner(ks *kindState, identity string, owned bool) actors.Spawn {
	return func() (*actor.PID, string) {
		ci := &cluster.ClusterIdentity{Kind: string(ks.kind), Identity: identity}
		pid := r.c.sys.AS.Root.SpawnPrefix(cluster.WithClusterIdentity(ks.props, ci), string(ks.kind)+"/"+identity)
		if !owned {
			time.AfterFunc(r.c.strayCheck(), func() { r.recheck(ks, identity, pid) })
		}
		return pid, identity
	}
}

// stopped is called by the identity's actor pid when it has stopped (after its last message and
// its own Stopping and Stopped handling): the messages held meanwhile go, in order, to a new
// actor. Whether this member owns the identity is asked again now; an actor for one it no
// longer owns stops after strayCheck, as in deliver.
func (r *router) stopped(kind actors.Kind, identity string, pid *actor.PID) {
	ks := r.c.kinds[kind]
	sh := ks.shard(identity)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	owner := r.c.owner(kind, identity)
	sh.ids.Stopped(r.c.sys.AS.Root, identity, pid, r.spawner(ks, identity, owner == "" || owner == r.c.cfg.Addr))
}

// recheck stops pid, the actor of identity, after its queued messages if another member owns
// the identity.
func (r *router) recheck(ks *kindState, identity string, pid *actor.PID) {
	sh := ks.shard(identity)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	cur, ok := sh.ids.Live[identity]
	if !ok || !cur.Equal(pid) {
		return
	}
	if owner := r.c.owner(ks.kind, identity); owner != "" && owner != r.c.cfg.Addr {
		sh.ids.Stop(identity, pid)
		r.c.sys.AS.Root.Poison(pid)
	}
}

// strayCheck is how long an actor this member does not own may live here: long enough for the
// members' views of the cluster to agree again (the static provider's checks are MemberRefresh
// apart on each member).
func (c *Cluster) strayCheck() time.Duration { return 3 * c.cfg.MemberRefresh }

// passivate drops the identity's entry if it still names pid, then stops pid after the messages
// already queued for it; deliveries hold the same lock, so none slips between the two, and
// those that come before pid has stopped wait for the next actor (stopped).
func (r *router) passivate(kind actors.Kind, identity string, pid *actor.PID) {
	ks := r.c.kinds[kind]
	sh := ks.shard(identity)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.ids.Stop(identity, pid)
	r.c.sys.AS.Root.Poison(pid)
}

// rehash stops, after their queued messages, the actors whose identity another member owns now;
// their next messages go to the new owner.
func (r *router) rehash() {
	moved := 0
	for _, ks := range r.c.kinds {
		for i := range ks.shards {
			sh := &ks.shards[i]
			sh.mu.Lock()
			for id, pid := range sh.ids.Live {
				if owner := r.c.owner(ks.kind, id); owner != r.c.cfg.Addr {
					sh.ids.Stop(id, pid)
					r.c.sys.AS.Root.Poison(pid)
					moved++
				}
			}
			sh.mu.Unlock()
		}
	}
	if moved > 0 {
		r.c.log.Info("actors moved to other members", "actors", moved)
	}
}

// stopAll stops every local actor after its queued messages and waits for them until deadline.
func (r *router) stopAll(deadline time.Time) int {
	var futures []*actor.Future
	for _, ks := range r.c.kinds {
		for i := range ks.shards {
			sh := &ks.shards[i]
			sh.mu.Lock()
			for id, pid := range sh.ids.Live {
				sh.ids.Stop(id, pid)
				futures = append(futures, r.c.sys.AS.Root.PoisonFuture(pid))
			}
			sh.mu.Unlock()
		}
	}
	for _, f := range futures {
		if time.Now().After(deadline) {
			break
		}
		_ = f.Wait()
	}
	return len(futures)
}

// activation is the actor of a cluster kind: it learns its identity from the context (set by
// cluster.WithClusterIdentity before Started) and makes the producer's actor with it, then
// passes it every message but protoactor's ClusterInit. Once stopped it tells the router, which
// then lets the identity's next actor start.
type activation struct {
	kind     actors.Kind
	produce  actors.Producer
	router   *router
	inner    actor.Actor
	identity string
	self     *actor.PID
}

func (a *activation) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		if a.inner == nil {
			identity := cluster.GetClusterIdentity(ctx).Identity
			self := ctx.Self()
			a.identity, a.self = identity, self
			a.inner = a.produce(identity, func() { a.router.passivate(a.kind, identity, self) })
		}
	case *actor.Stopped:
		if a.self != nil {
			// After the inner actor's own Stopped (deferred), and even when it panics there:
			// the identity's held messages must not wait for good.
			defer a.router.stopped(a.kind, a.identity, a.self)
		}
	case *cluster.ClusterInit:
		return
	}
	if a.inner != nil {
		a.inner.Receive(ctx)
	}
}

// Tell implements actors.Directory. Messages told to one identity from one goroutine arrive in
// order while its owner stays the same. One told to a member that died before the others
// noticed is lost with that member (and with the actor's state there).
func (c *Cluster) Tell(kind actors.Kind, identity string, msg proto.Message) {
	if c.closed.Load() {
		c.log.Debug("tell after shutdown dropped", "kind", kind, "identity", identity)
		return
	}
	c.router.route(kind, identity, msg, nil, 0)
}

// Request implements actors.Directory. It waits until ctx's deadline (RequestTimeout without
// one). A request that did not reach the owner (it was unreachable) is sent again, and so is one
// whose owner left the cluster while it waited; one the owner may have received is not.
func (c *Cluster) Request(ctx context.Context, kind actors.Kind, identity string, msg proto.Message) (proto.Message, error) {
	reply, err := c.request(ctx, kind, identity, msg)
	if err != nil {
		return nil, fmt.Errorf("%s actor %s: %w", kind, identity, err)
	}
	return reply, nil
}

func (c *Cluster) request(ctx context.Context, kind actors.Kind, identity string, msg proto.Message) (proto.Message, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	if _, ok := c.kinds[kind]; !ok {
		return nil, fmt.Errorf("kind %q is not served by this cluster", kind)
	}
	backoff := 10 * time.Millisecond
	var last error
	for {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		v := c.view.Load()
		owner := v.owner(kind, identity)
		if owner == "" {
			last = fmt.Errorf("no member hosts kind %q", kind)
		} else {
			reply, retry, err := c.attempt(ctx, v, owner, kind, identity, msg)
			if !retry {
				return reply, err
			}
			c.log.Debug("request sent again", "kind", kind, "identity", identity, "error", err.Error())
			last = err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last attempt: %w)", ctx.Err(), last)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// attempt sends one request to owner and waits for its reply; retry says whether it surely did
// not reach the actor (undeliverable, or the owner left the cluster meanwhile).
func (c *Cluster) attempt(ctx context.Context, v *view, owner string, kind actors.Kind, identity string, msg proto.Message) (reply proto.Message, retry bool, err error) {
	rp := c.newReplies([]string{""})
	defer rp.close()
	if owner == c.cfg.Addr {
		c.router.deliver(c.kinds[kind], identity, msg, rp.pids[""], true)
	} else {
		c.router.forward(owner, kind, identity, msg, rp.pids[""], 1)
	}
	for {
		select {
		case r := <-rp.ch:
			switch m := r.msg.(type) {
			case *actor.DeadLetterResponse:
				return nil, true, fmt.Errorf("member %s unreachable", owner)
			case *clusterpb.NodeError:
				return nil, false, errors.New(m.Message)
			case proto.Message:
				return m, false, nil
			default:
				return nil, false, fmt.Errorf("unexpected reply %T", r.msg)
			}
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-v.changed:
			v = c.view.Load()
			if owner != c.cfg.Addr && !v.has(owner) {
				return nil, true, fmt.Errorf("member %s left the cluster", owner)
			}
		}
	}
}

// Active implements actors.Directory: the identities of kind live on this member.
func (c *Cluster) Active(kind actors.Kind) []string {
	ks, ok := c.kinds[kind]
	if !ok {
		return nil
	}
	var ids []string
	for i := range ks.shards {
		sh := &ks.shards[i]
		sh.mu.Lock()
		for id := range sh.ids.Live {
			ids = append(ids, id)
		}
		sh.mu.Unlock()
	}
	return ids
}

// Count is how many actors of kind are live on this member.
func (c *Cluster) Count(kind actors.Kind) int {
	ks, ok := c.kinds[kind]
	if !ok {
		return 0
	}
	n := 0
	for i := range ks.shards {
		sh := &ks.shards[i]
		sh.mu.Lock()
		n += len(sh.ids.Live)
		sh.mu.Unlock()
	}
	return n
}

var _ actors.Directory = (*Cluster)(nil)
