"""Generate: everything on the candidate's side of a run.

`oab-bench run` (run.py) takes one RunSettings (run_settings.py), checks everything before its first
paid call (run_checks.py), optionally serves an open-weight model (vllm_server.py), and runs
lighteval's pipeline in its own process (the task told the run's settings through task_run.py;
lighteval 0.13's workarounds in lighteval_compat.py), keeping every paid answer (answer_store.py). What the candidate is asked is task_prompt.py. May import the core, grading,
leaderboard and audit; nothing imports it but the task file and the CLI.
"""
