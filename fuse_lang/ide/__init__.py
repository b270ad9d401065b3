"""Editor services as plain data over the analysis, the plan and results: hover,
completion, the outline, semantic tokens, inlay hints, folding, formatting, symbol
queries, run targets and summaries, explain's run plan, pictures, cancellation."""
