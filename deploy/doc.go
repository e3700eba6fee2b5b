// Package deploy holds no code: its folder has the manifests that run svc as a cluster (Docker
// Compose, Kubernetes, systemd; README.md says how), and its test checks them against the
// settings svc reads (cmd/svc/node.Settings) without a network or a container engine.
package deploy
