"""Running a checked program: `program` (compile, CompiledProgram) with `compiling`
(compile's steps), `run_plan` (the typed RunPlan a run executes, one per input-shape
signature) made from `scheduler`'s pure functions, `execution` (one run executing it)
and `compiled_run` (its compiled graphs), `inputs` and `outputs`, `memory` (the guard),
`interpret/` (the reference interpreter), `fixpoint/`, `sparse/` (every sparse
representation), `train/`, `backends/` (the dense backends).  Files are read and
written by `fuse_lang.io`."""
