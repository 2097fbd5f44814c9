"""The application: the supervisor that runs the stream processes and composes them with
disaster recovery, topic config sync and the HTTP endpoint."""
