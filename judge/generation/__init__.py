"""Generate: everything on the candidate's side of a run (`oab-bench run`: its settings, its checks,
local vLLM servers, lighteval's pipeline in this process, the answer store). Imported only by the task
file and the CLI."""
