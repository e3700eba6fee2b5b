// Package cluster will run several svc nodes as one protoactor cluster: app and session actors
// placed on nodes by identity (protoactor's disthash lookup) behind the actors.Directory
// interface, with a static-host provider for local runs and etcd for production (docs/architecture.md, "Actors").
//
// It holds no code yet: a node today runs every actor itself through actors.LocalDirectory,
// and nothing outside package actors depends on where an actor runs, so cluster mode can be
// added here without changing any caller.
package cluster
