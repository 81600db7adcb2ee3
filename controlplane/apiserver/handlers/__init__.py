"""Request handlers: discovery, resource CRUD, watch."""
