"""Provenance: why a tuple holds or not, why a number is what it is (docs/why.md).

Asked through `RunResult.why`; the answers are plain frozen dataclasses (`data`)."""
