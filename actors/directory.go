package actors

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
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
// it after the messages already in its mailbox; actors call it when idle.
type Producer func(identity string, passivate func()) actor.Actor

const dirShards = 64

type dirShard struct {
	mu   sync.Mutex
	pids map[string]*actor.PID
}

// LocalDirectory is the single-node Directory.
type LocalDirectory struct {
	system    *actor.ActorSystem
	producers map[Kind]Producer
	shards    map[Kind]*[dirShards]dirShard
	seed      maphash.Seed
}

// NewLocalDirectory serves the kinds that have a producer.
func NewLocalDirectory(s *System, producers map[Kind]Producer) *LocalDirectory {
	d := &LocalDirectory{system: s.AS, producers: producers, shards: map[Kind]*[dirShards]dirShard{}, seed: maphash.MakeSeed()}
	for k := range producers {
		var sh [dirShards]dirShard
		for i := range sh {
			sh[i].pids = map[string]*actor.PID{}
		}
		d.shards[k] = &sh
	}
	return d
}

func (d *LocalDirectory) shard(kind Kind, identity string) *dirShard {
	sh, ok := d.shards[kind]
	if !ok {
		panic(fmt.Sprintf("actors: no producer for kind %q", kind))
	}
	return &sh[maphash.String(d.seed, identity)%dirShards]
}

// pid returns the live actor of identity, spawning it when needed; called with sh.mu held.
func (d *LocalDirectory) pidLocked(sh *dirShard, kind Kind, identity string) *actor.PID {
	if pid, ok := sh.pids[identity]; ok {
		return pid
	}
	var self *actor.PID // written under sh.mu below; passivate reads it under sh.mu
	passivate := func() { d.passivate(sh, identity, &self) }
	props := actor.PropsFromProducer(func() actor.Actor { return d.producers[kind](identity, passivate) })
	self = d.system.Root.Spawn(props)
	sh.pids[identity] = self
	return self
}

// passivate drops the identity's entry if it still names pid, then stops pid after the messages
// already queued for it. Tells hold the same lock, so none slips between the two.
func (d *LocalDirectory) passivate(sh *dirShard, identity string, ref **actor.PID) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	pid := *ref
	if cur, ok := sh.pids[identity]; ok && cur.Equal(pid) {
		delete(sh.pids, identity)
	}
	d.system.Root.Poison(pid)
}

// Tell implements Directory.
func (d *LocalDirectory) Tell(kind Kind, identity string, msg proto.Message) {
	sh := d.shard(kind, identity)
	sh.mu.Lock()
	d.system.Root.Send(d.pidLocked(sh, kind, identity), msg)
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
	sh.mu.Lock()
	f := d.system.Root.RequestFuture(d.pidLocked(sh, kind, identity), msg, timeout)
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
	sh, ok := d.shards[kind]
	if !ok {
		return nil
	}
	var ids []string
	for i := range sh {
		sh[i].mu.Lock()
		for id := range sh[i].pids {
			ids = append(ids, id)
		}
		sh[i].mu.Unlock()
	}
	return ids
}

// Count is how many actors of a kind are live.
func (d *LocalDirectory) Count(kind Kind) int {
	sh, ok := d.shards[kind]
	if !ok {
		return 0
	}
	n := 0
	for i := range sh {
		sh[i].mu.Lock()
		n += len(sh[i].pids)
		sh[i].mu.Unlock()
	}
	return n
}

// StopAll stops every live actor after its queued messages and waits, so state they save on
// stopping is saved (graceful shutdown).
func (d *LocalDirectory) StopAll(timeout time.Duration) {
	var futures []*actor.Future
	for _, sh := range d.shards {
		for i := range sh {
			sh[i].mu.Lock()
			for id, pid := range sh[i].pids {
				futures = append(futures, d.system.Root.PoisonFuture(pid))
				delete(sh[i].pids, id)
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
