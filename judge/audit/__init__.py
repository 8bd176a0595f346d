"""The audit report: one self-contained HTML file from the leaderboard down to each rubric item's
score and analysis, beside the candidate's and the official answer; no network, every text escaped."""
