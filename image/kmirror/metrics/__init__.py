"""Prometheus metrics (`kmirror_<subsystem>_<name>_<unit>`) and the /metrics, /healthz, /readyz
HTTP endpoint."""
