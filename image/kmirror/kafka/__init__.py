"""Kafka access: the one client factory, the shared queries (topics, watermarks, committed
offsets, groups), reading a topic to its end, and the batch path's connections."""
