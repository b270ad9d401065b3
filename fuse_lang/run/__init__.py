"""Running a checked program: scheduling, fixpoints, sources/sinks/queries, backends."""
