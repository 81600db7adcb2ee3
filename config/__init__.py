"""The Django project that hosts Kubelab: settings (env-driven), URL routes and the ASGI application."""
