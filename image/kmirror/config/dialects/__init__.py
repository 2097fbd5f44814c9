"""Dialect parsers: MirrorMaker 1 files, mm2.properties and KUDO parameters -> the one
model; the loader picks the dialect."""
