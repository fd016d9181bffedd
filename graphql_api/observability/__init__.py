"""What an operator sees: one access-log line per request, Prometheus metrics, CloudWatch EMF,
traces, the request id that ties them together, and the refusals sent straight on the ASGI
channel, each counted once."""
