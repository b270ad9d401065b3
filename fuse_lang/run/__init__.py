"""Running a checked program: `program` (compile, CompiledProgram), `execution` (one run),
`scheduler` (what and in which order), `fixpoint`, `inputs` (sources), `outputs` (queries,
sinks), `memory` (the guard), `interpret/` (equations), `sparse/`, `backends/`; files
are read and written by `fuse_lang.io`."""
