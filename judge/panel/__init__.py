"""`--panel`: published answers judged beside the candidate, by the same judge (docs/panel.md).

`upstream.py` fetches upstream's six published answer files once and verifies them; `source.py`
turns `--panel` arguments into answers; `judging.py` pairs them with the dataset and marks their
judgments; `estimate.py` shows their bill apart from the candidate's.
"""
