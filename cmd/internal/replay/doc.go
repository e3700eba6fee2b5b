// Package replay renders the recorded SDK request bodies of testdata/sdk as new requests: fresh
// event, session, attachment, span and trace ids (consistent within a body) and, when asked,
// times moved so that the body's latest item lands on a given instant. cmd/loadgen sends them as
// load and cmd/demo sends each once to show a new node something.
package replay
