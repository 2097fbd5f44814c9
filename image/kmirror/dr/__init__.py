"""Disaster recovery: consumer-group offsets follow the data (MM2's checkpoints, heartbeats and
group offset sync, with exact translation from the progress book)."""
