"""Operating a running mirror: paused topics, drains and run-time throttles (state.py, kept on
the target by store.py), token buckets (throttle.py) and the gate a stream's copier asks before
it fetches and copies (gate.py)."""
