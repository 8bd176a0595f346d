"""The leaderboard: judged records from any input (inputs.py) -> per judge, per model exam scores,
pass rates and 95% intervals, rendered as markdown, CSV, JSON (tables.py), and a picture (plot.py)."""
