"""`--panel`: published answers judged beside the candidate, by the same judge (docs/panel.md).

`upstream.py` fetches upstream's six published answer files once and verifies them; `published.py`
turns `--panel` arguments into answers; `judging.py` pairs them with the dataset, marks their
judgments and gives `judge --panel` its share; `runs.py` is `run --panel`'s; `estimate.py` shows
their bill apart from the candidate's. The leaderboard and the audit report read the marked
records without importing this stage.
"""
