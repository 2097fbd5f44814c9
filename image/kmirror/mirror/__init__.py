"""The mirror: the streams that copy records source -> target (kmirror.app runs them)."""
