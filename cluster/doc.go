// Package cluster runs several svc nodes as one protoactor-go cluster. A *Cluster implements
// actors.Directory: each app and session actor lives on one member, chosen by the rendezvous
// hash of its identity over the current members (the hash of protoactor's disthash lookup), and
// Tell and Request reach it from any member. It also asks members themselves (Serve, AskMember,
// AskAll): how many actors each runs, flush now.
//
// # Placement
//
// Messages for an identity go to its owner's router (router.go), which keeps the identities'
// live actors as actors.LocalDirectory does on one node, activating one on the first message and
// after a passivation. protoactor's own placement is not used for svc's kinds: members cache the
// PID of a remote activation and nothing clears the cache when it passivates, so a message sent
// from another member afterwards is dropped silently (measured). When the members change, a
// member stops (after their queued messages) the actors whose identity moved, and the next
// message activates them on the new owner, which reads the state they saved. For a moment both
// may run, and messages told to a member that died before the others noticed are lost with it.
//
// # Providers
//
// static: every member's remoting address is listed (cfg.Peers). Each member checks every peer
// over HTTP on its health port, the remoting port + 1, every MemberRefresh; a peer that fails
// one check (down, or no answer in 2 s) leaves the cluster, and protoactor refuses that member
// id for good: a node dropped while it still runs must restart to join again (InCluster says
// when). A killed member's identities answer from a survivor once the survivors' next checks
// fail, one to two MemberRefresh after its death (under 1.2 s in the tests, 300 ms apart).
//
// etcd: members register under /svc/clusters/<name>/ with a lease of 3 s (fixed by protoactor)
// and watch that prefix. A killed member's key expires with its lease, 2 to 3.5 s after its
// death (the tests measured 2.2 to 3.3 s until its identities answered elsewhere).
// protoactor's etcd calls have no deadline: Start asks etcd first and fails when it does not
// answer, and Shutdown does not deregister when etcd is unreachable (the lease expires).
// After deregistering, a graceful Shutdown waits (up to 1 s) for the member's own watch to
// report its departure before it stops remoting: protoactor handles that report on the watch's
// goroutine and crashes the process if remoting has stopped gracefully by then. A report slower
// than the wait, or another member's change taken in the moment before the watch is cancelled,
// can still do so.
//
// A graceful Shutdown stops the member's actors (they save their state) and tells every other
// member to place its identities elsewhere at once, before it stops the provider.
//
// # What crosses nodes
//
// Only protobuf messages whose Go types are linked into every member: protoactor drops a plain
// Go struct sent to another node without an error (the caller times out), and a message whose
// type the receiver does not know breaks the connection between the two members, losing every
// message queued on it. Messages to a member are sent in batches of up to 100 and a member takes
// batches up to 256 MiB: a larger batch is refused and lost whole.
//
// # Ports
//
// The remoting port (cfg.Addr, gRPC, bound to Addr's host) must be reachable by every member.
// The static provider also listens on the remoting port + 1 (HTTP, GET /_health) on every
// interface, whatever host Addr names, and tells anyone who asks the member's id, address and
// kinds: firewall both ports from everything but the other members. Neither is authenticated
// or encrypted.
package cluster
