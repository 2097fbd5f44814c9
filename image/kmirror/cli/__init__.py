"""Command line: `kmirror run|check|render|entrypoint|env-docs`."""
