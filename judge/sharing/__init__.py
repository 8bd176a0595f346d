"""Share judged results as a Hub dataset: `oab-bench export` and `oab-bench push-results`.

`export.py` (sources -> rows -> a folder, written whole, replacing only a folder an export wrote),
`results_card.py` (the card: configs, leaderboard, provenance, licence), `push.py` (the upload, behind
the Hub guard). The dataset's layout and its reader are in the judge core (judge/results_layout.py,
judge/results_source.py), since every reader of judgments takes `hf:` results back.
"""
