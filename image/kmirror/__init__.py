"""kmirror: byte-exact Kafka cluster mirroring, at least once or exactly once."""

__version__ = "0.1.0"
