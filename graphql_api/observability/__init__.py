"""What an operator sees: one access-log line per request, Prometheus metrics, CloudWatch EMF."""
