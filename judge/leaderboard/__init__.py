"""The leaderboard: judged records (judged.py) from any input (inputs.py, upstream_turns.py) -> per
judge, per model exam scores, pass rates and 95% intervals (tables.py) -> markdown, CSV, JSON
(formats.py) and a picture (plot.py). May import the core and grading's records; validity and the
audit report build on it.
"""
