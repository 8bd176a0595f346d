"""Generate: everything on the candidate's side of a run.

`oab-bench run` (run.py, its steps in run_*.py) checks its inputs (preflight.py), starts lighteval's
litellm backend as a child (lighteval_child.py, lighteval_endpoint.py, with the workarounds
lighteval 0.13 needs in lighteval_compat.py), keeps every paid answer (answer_store.py), optionally
serves an open-weight model (vllm_server.py, local_servers.py), and keeps no child alive after it
ends (processes.py). What the candidate is asked is task_prompt.py. May import the core, grading,
leaderboard and audit; nothing imports it but the task file and the CLI.
"""
