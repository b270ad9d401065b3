"""Running a checked program: `program` (compile, CompiledProgram), `execution` (one run),
`scheduler` (what and in which order), `fixpoint`, `inputs` (sources), `outputs` (queries,
sinks), `memory` (the guard), `evaluate` (equations), `files`, `labelled`, `backends/`."""
