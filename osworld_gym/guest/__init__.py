"""The guest: the HTTP server that runs inside each desktop, and the host's client for it."""
