"""The API server: the hub of a cluster, and the only door to its store.

Every request, from kubectl, from a browser form or from a component, runs the same pipeline, in
upstream's order (apiserver ``pkg/server/config.go`` ``DefaultBuildHandlerChain``): authentication,
audit, impersonation, flow control, authorization, then the handler with admission, validation and
storage. Each stage is a module of its own and reports on the trace what it did.

Where to start reading: ``server.py`` (``APIServer._serve``, the pipeline in one function), then
``pipeline.py`` (the value each stage makes), ``routing.py`` (which handler serves a URL),
``requestscope.py`` (what every write carries to the registry) and ``registry.py`` (how a write
reaches the store).
"""
