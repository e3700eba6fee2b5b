package actors

import "github.com/asynkron/protoactor-go/actor"

// Identities is a shard of a directory's actors by identity (LocalDirectory here, the cluster's
// router there): each identity's live actor, or the one told to stop and the messages that came
// for the identity since. An identity's next actor starts only once the previous one has
// stopped, and saved its state on Stopping: started at once, it would run beside the old one,
// handling later messages before the old one's queued ones and reading the state before the
// old one saved it. Not safe for concurrent use: the owner's lock guards it.
type Identities struct {
	// Live is each identity's live actor; owners range over it (counts, shutdown, moves).
	Live     map[string]*actor.PID
	stopping map[string]*stoppingActor
}

// stoppingActor is an identity's actor told to stop that has not stopped yet, and the messages
// for the identity since, in arrival order, for the actor after it.
type stoppingActor struct {
	pid  *actor.PID
	held []any
}

// Spawn starts an actor for an identity and returns it with the identity to key it by: a
// string the caller keeps anyway (LocalDirectory's is part of the PID's name), so that a
// hundred thousand session actors do not hold their identity twice.
type Spawn func() (pid *actor.PID, key string)

// Send sends msg to identity's live actor, starting one with spawn when there is none, or
// holds msg while the identity's previous actor is still stopping.
func (ids *Identities) Send(root *actor.RootContext, identity string, msg any, spawn Spawn) {
	pid, ok := ids.Live[identity]
	if !ok {
		if st := ids.stopping[identity]; st != nil {
			st.held = append(st.held, msg)
			return
		}
		pid = ids.add(spawn)
	}
	root.Send(pid, msg)
}

func (ids *Identities) add(spawn Spawn) *actor.PID {
	if ids.Live == nil {
		ids.Live = map[string]*actor.PID{}
	}
	pid, key := spawn()
	ids.Live[key] = pid
	return pid
}

// Stop records identity's actor pid as stopping, if it is the live one; the caller then
// poisons pid under the same lock. Messages for identity are held until pid has stopped.
func (ids *Identities) Stop(identity string, pid *actor.PID) {
	if cur, ok := ids.Live[identity]; !ok || !cur.Equal(pid) {
		return
	}
	delete(ids.Live, identity)
	if ids.stopping == nil {
		ids.stopping = map[string]*stoppingActor{}
	}
	ids.stopping[identity] = &stoppingActor{pid: pid}
}

// Stopped is told that identity's actor pid has stopped (after its own Stopped handling): the
// messages held meanwhile go, in order, to a new actor started with spawn. An actor that
// stopped on its own is forgotten, so the next message starts a new one.
func (ids *Identities) Stopped(root *actor.RootContext, identity string, pid *actor.PID, spawn Spawn) {
	if cur, ok := ids.Live[identity]; ok && cur.Equal(pid) {
		delete(ids.Live, identity)
	}
	st := ids.stopping[identity]
	if st == nil || !st.pid.Equal(pid) {
		return
	}
	delete(ids.stopping, identity)
	if len(st.held) == 0 {
		return
	}
	next := ids.add(spawn)
	for _, msg := range st.held {
		root.Send(next, msg)
	}
}
