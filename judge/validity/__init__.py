"""Is the judge right? Agreement between judgment sources (judges, juries, repeats, human graders)
and probes whose right grade is known; models are called only through the normal judge path."""
