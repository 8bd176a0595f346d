"""Is the judge right? Agreement between judgment sources (judges, juries, repeats, human graders)
and probes whose right grade is known (reference, partial, swapped, empty, injected answers).

Reads judgments the way the leaderboard does (judge.leaderboard.inputs); never calls a model itself
except through the normal judge path.
"""
