"""The audit report: one self-contained HTML file per run or leaderboard, from the leaderboard
down to each rubric item's score and the judge's analysis, beside the candidate's and the
official answer. No server, no network at view time; every text from the inputs is escaped.
"""
