"""Share judged results as a Hub dataset: `export.py` (sources -> rows -> a folder written whole),
`results_card.py` (its card), `push.py` (`push-results`: the upload, behind the Hub guard). The
layout and its reader are in the judge core (results_layout.py, results_source.py): every reader of
judgments takes `hf:` results back.
"""
