"""The batch path: copy source record batches to the same target partition as they are
(see copier.py and docs/architecture.md, "The batch path")."""
