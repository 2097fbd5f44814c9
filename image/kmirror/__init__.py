"""kmirror: byte-exact, at-least-once Kafka cluster mirroring."""

__version__ = "0.1.0"
