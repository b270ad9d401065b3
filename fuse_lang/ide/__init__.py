"""Editor services as plain data over the analysis and the plan: hover, completion, outline,
formatting, symbol queries, run targets and summaries, cancellation."""
