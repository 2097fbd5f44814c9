"""kmirror benchmark harness: kmirror against Apache MirrorMaker 2 on the same two clusters.

``python -m scripts.bench.run --smoke|--full`` (``make bench-smoke`` / ``make bench``); the
method and the settings of every contender are in docs/benchmarks.md.
"""
