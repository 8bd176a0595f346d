"""File names, markers and grace periods every stage shares, defined once: a name written by one command
and read by another must not be spelled twice (a second copy drifts)."""

# Files in a cache folder, a run's output folder or a probe's folder.
JUDGMENTS_FILE = "judgments.jsonl"  # a run's and a probe's judgments
JUDGMENT_CACHE_FILE = "judgments.sqlite"  # the judgment cache (oab_bench/keyed_store.py)
ANSWERS_FILE = "answers.sqlite"  # the answer store
BATCH_FILE = JUDGMENT_CACHE_FILE  # Batch API batches of a judgment cache: a table of its database
SUMMARY_FILE = "oab_bench_summary.json"  # what `oab-bench run` scored
PANEL_JUDGMENTS_FILE = "panel_judgments.jsonl"  # `run --panel`: the panel's judgments, beside the run's
PROBE_REPORT_FILE = "report.json"  # what `oab-bench probe` concluded
HTML_REPORT_FILE = "report.html"  # the audit report a run leaves in its output folder
PROBE_JUDGMENTS_FILE = "probe_judgments.jsonl"  # judge-sweep: each judge's probe judgments
PROBE_ANSWERS_DIR = "answers"  # a probe's answers beside its judgments, one FastChat file per probe

# Names: a model named so is one of `oab-bench probe`'s answers of known worth, never a real model.
PROBE_PREFIX = "probe:"

# Markers: a folder holding one was written by us, so a later command may write there again.
RUN_MARKER = ".oab-bench-run"  # every output folder `run` makes or fills
BUILD_MARKER = ".oab-bench-build"  # a dataset folder `build` wrote; lists what it wrote
EXPORT_MARKER = ".oab-bench-export"  # a results folder `export` wrote; lists what it wrote
PROBE_MARKER = ".oab-bench-probe"  # every output folder `probe` makes or fills
SWEEP_MARKER = ".oab-bench-judge-sweep"  # every output folder `judge-sweep` makes or fills
SWEEP_FILE = "sweep.json"  # judge-sweep's report (its JSON contract), in its output folder
SWEEP_PAGE_FILE = "sweep.html"  # the same as a page: table, Pareto front, validity against dollars
TINY_MODEL_MARKER = ".oab-bench-tiny-model"  # the test model benchmarks/tiny_model.py writes

# Grace periods after a stop (Ctrl-C, SIGTERM, SIGHUP).
JUDGE_STOP_GRACE_S = 10.0  # judge calls in flight may finish (and be stored) this long
CHILD_STOP_GRACE_S = 15.0  # the lighteval child: its calls in flight may finish, then it exits
