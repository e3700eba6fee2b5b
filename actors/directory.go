package actors

import (
	"context"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
)

// Kind names an actor kind that is addressed by identity.
type Kind string

// The identity-addressed kinds.
const (
	KindApp     Kind = "app"     // identity: app id
	KindSession Kind = "session" // identity: app id + "/" + session id
)

// Directory reaches app and session actors by identity, activating one on first use. Callers
// know nothing of where an actor runs: the local directory keeps them in this process; cluster
// mode (package cluster) implements the same interface over protoactor's cluster. Messages are
// protobuf so that they can cross nodes.
type Directory interface {
	// Tell delivers msg without waiting. Messages told to one identity arrive in order.
	Tell(kind Kind, identity string, msg proto.Message)
	// Request delivers msg and waits for the actor's reply.
	Request(ctx context.Context, kind Kind, identity string, msg proto.Message) (proto.Message, error)
	// Active lists the identities of a kind's live actors (the debug endpoint).
	Active(kind Kind) []string
}

// Producer makes the actor for an identity. passivate removes it from the directory and stops
// it after the messages already in its mailbox; actors call it when idle. The identity's next
// actor starts only once this one has stopped (and saved its state on Stopping): messages for
// it that come meanwhile wait in the directory, in order.
type Producer func(identity string, passivate func()) actor.Actor

const dirShards = 64

type dirShard struct {
	mu  sync.Mutex
	ids Identities
}

// dirKind is what the directory keeps per kind: its live actors by identity, its producer, and
// the one *actor.Props every activation of the kind is spawned from (Props built per spawn cost
// a Props and two closures per live actor, docs/benchmarks.md "Session actor memory").
type dirKind struct {
	d       *LocalDirectory
	kind    Kind
	produce Producer
	props   *actor.Props
	shards  [dirShards]dirShard
}

// LocalDirectory is the single-node Directory.
type LocalDirectory struct {
	system *actor.ActorSystem
	kinds  map[Kind]*dirKind
	seed   maphash.Seed
	spawns atomic.Uint64 // numbers the actors' names (nameOf)
}

// NewLocalDirectory serves the kinds that have a producer.
func NewLocalDirectory(s *System, producers map[Kind]Producer) *LocalDirectory {
	d := &LocalDirectory{system: s.AS, kinds: map[Kind]*dirKind{}, seed: maphash.MakeSeed()}
	for k, p := range producers {
		dk := &dirKind{d: d, kind: k, produce: p}
		opts := []actor.PropsOption(nil)
		if k == KindSession {
			// Session actors are many (one per live mobile session) and get a few messages
			// each: protoactor's lock-free unbounded mailbox costs ~48 bytes idle where the
			// default one keeps a 10-slot ring (~250 bytes). Both are unbounded FIFO queues
			// that never drop; the lock-free one allocates a node per message instead.
			opts = append(opts, actor.WithMailbox(actor.UnboundedLockfree()))
		}
		dk.props = actor.PropsFromProducer(func() actor.Actor { return &activation{k: dk} }, opts...)
		d.kinds[k] = dk
	}
	return d
}

func (d *LocalDirectory) shard(kind Kind, identity string) *dirShard {
	dk, ok := d.kinds[kind]
	if !ok {
		panic(fmt.Sprintf("actors: no producer for kind %q", kind))
	}
	return dk.shard(identity)
}

func (dk *dirKind) shard(identity string) *dirShard {
	return &dk.shards[maphash.String(dk.d.seed, identity)%dirShards]
}

// nameOf is the process name of an activation of identity: the identity, '#', and a number no
// other activation has, so a new activation never collides with one still stopping after
// passivation. The directory's map key is the name's identity part (identityOf), so the
// identity is held once, in the PID.
func (d *LocalDirectory) nameOf(identity string) string {
	var buf [128]byte
	b := append(buf[:0], identity...)
	b = append(b, '#')
	b = strconv.AppendUint(b, d.spawns.Add(1), 36)
	return string(b)
}

// identityOf is the identity in a process name made by nameOf.
func identityOf(name string) string {
	return name[:strings.LastIndexByte(name, '#')]
}

// send hands msg to identity's actor (Identities.Send); called with sh.mu held.
func (dk *dirKind) send(sh *dirShard, identity string, msg any) {
	sh.ids.Send(dk.d.system.Root, identity, msg, dk.spawner(identity))
}

// spawner starts an actor for identity, keyed by its name's identity part (nameOf).
func (dk *dirKind) spawner(identity string) Spawn {
	return func() (*actor.PID, string) {
		self, err := dk.d.system.Root.SpawnNamed(dk.props, dk.d.nameOf(identity))
		if err != nil {
			panic(err) // names are unique (nameOf); as Root.Spawn does
		}
		return self, identityOf(self.Id)
	}
}

// stopped is called once the activation pid has stopped (Identities.Stopped).
func (dk *dirKind) stopped(pid *actor.PID) {
	identity := identityOf(pid.Id)
	sh := dk.shard(identity)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.ids.Stopped(dk.d.system.Root, identity, pid, dk.spawner(identity))
}

// activation is the actor the directory spawns: it learns its identity from its process name
// and makes the producer's actor when it starts (again after a restart, as protoactor makes a
// new actor from the Props then), and passes it every message. Once stopped it tells the
// directory, which then lets the identity's next actor start.
type activation struct {
	k     *dirKind
	self  *actor.PID
	inner actor.Actor
}

func (a *activation) Receive(ctx actor.Context) {
	if a.inner == nil { // the first message: Started
		a.self = ctx.Self()
		a.inner = a.k.produce(identityOf(a.self.Id), a.passivate)
	}
	if _, ok := ctx.Message().(*actor.Stopped); ok {
		// After the inner actor's own Stopped, even when it panics there: the identity's held
		// messages must not wait for good.
		defer a.k.stopped(a.self)
	}
	a.inner.Receive(ctx)
}

// passivate drops the identity's entry if it still names this actor, then stops it after the
// messages already queued for it. Tells hold the same lock, so none slips between the two, and
// those that come before it has stopped wait for the next actor (stopped).
func (a *activation) passivate() {
	identity := identityOf(a.self.Id)
	sh := a.k.shard(identity)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.ids.Stop(identity, a.self)
	a.k.d.system.Root.Poison(a.self)
}

// Tell implements Directory.
func (d *LocalDirectory) Tell(kind Kind, identity string, msg proto.Message) {
	sh := d.shard(kind, identity)
	sh.mu.Lock()
	d.kinds[kind].send(sh, identity, msg)
	sh.mu.Unlock()
}

// Request implements Directory.
func (d *LocalDirectory) Request(ctx context.Context, kind Kind, identity string, msg proto.Message) (proto.Message, error) {
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return nil, ctx.Err()
		}
	}
	sh := d.shard(kind, identity)
	f := actor.NewFuture(d.system, timeout) // as Root.RequestFuture, but the request may be held
	sh.mu.Lock()
	d.kinds[kind].send(sh, identity, &actor.MessageEnvelope{Message: msg, Sender: f.PID()})
	sh.mu.Unlock()
	res, err := f.Result()
	if err != nil {
		return nil, fmt.Errorf("%s actor %s: %w", kind, identity, err)
	}
	reply, ok := res.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%s actor %s: unexpected reply %T", kind, identity, res)
	}
	return reply, nil
}

// Active implements Directory.
func (d *LocalDirectory) Active(kind Kind) []string {
	dk, ok := d.kinds[kind]
	if !ok {
		return nil
	}
	sh := &dk.shards
	var ids []string
	for i := range sh {
		sh[i].mu.Lock()
		for id := range sh[i].ids.Live {
			ids = append(ids, id)
		}
		sh[i].mu.Unlock()
	}
	return ids
}

// Count is how many actors of a kind are live.
func (d *LocalDirectory) Count(kind Kind) int {
	dk, ok := d.kinds[kind]
	if !ok {
		return 0
	}
	sh := &dk.shards
	n := 0
	for i := range sh {
		sh[i].mu.Lock()
		n += len(sh[i].ids.Live)
		sh[i].mu.Unlock()
	}
	return n
}

// StopAll stops every live actor after its queued messages and waits, so state they save on
// stopping is saved (graceful shutdown).
func (d *LocalDirectory) StopAll(timeout time.Duration) {
	var futures []*actor.Future
	for _, dk := range d.kinds {
		sh := &dk.shards
		for i := range sh {
			sh[i].mu.Lock()
			for id, pid := range sh[i].ids.Live {
				sh[i].ids.Stop(id, pid)
				futures = append(futures, d.system.Root.PoisonFuture(pid))
			}
			sh[i].mu.Unlock()
		}
	}
	deadline := time.Now().Add(timeout)
	for _, f := range futures {
		_ = f.Wait()
		if time.Now().After(deadline) {
			return
		}
	}
}
