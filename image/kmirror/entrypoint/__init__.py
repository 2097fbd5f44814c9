"""The container entrypoint: render the config templates from the environment, then run the
mirror in this process (it is PID 1 in the container). `kmirror render` shows the result."""
