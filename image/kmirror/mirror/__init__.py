"""The mirror: streams that copy records source -> target and a supervisor that runs them."""
