"""The API server: the hub of a cluster, and the only door to its store.

Every request, from kubectl, from a browser form or from a component, runs the same pipeline, in
upstream's order (apiserver ``pkg/server/config.go`` ``DefaultBuildHandlerChain``): authentication,
audit, impersonation, flow control, authorization, then the handler with admission, validation and
storage. Each stage is a module of its own and reports on the trace what it did.
"""
