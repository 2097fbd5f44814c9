"""The container's configuration from its environment: the templates rendered, checked and
handed to the loader in memory (render.py). The `kmirror entrypoint` and `kmirror render`
commands that use it are in cli/entrypoint.py; nothing here imports the command line."""
