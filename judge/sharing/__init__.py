"""Share judged results as a Hub dataset, and read such a dataset back wherever judgments are read.

`layout.py` (its files, configs, columns and card marker), `source.py` (an `hf:` spec or a folder ->
its rows; imported by the readers of judge/report, judge/audit and judge/validity, so it imports none
of them), `export.py` (`oab-bench export`: sources -> tables -> folder), `card.py`, `push.py`
(`oab-bench push-results`), `command.py` (both subcommands' flags).
"""
