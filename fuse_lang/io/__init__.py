"""File formats, read by the checker (headers) and the run (data), and written by
sinks: sources, whole relation files, safetensors, weights manifests, sinks."""
