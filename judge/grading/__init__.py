"""Grade: one judge (or a jury) scoring answers item by item against the rubric; code adds the scores.

prompts.py / upstream_prompts.py (what the judge sees) -> reply_schema.py (what it may answer) ->
client.py (one call through litellm, retried, classified, priced) -> grader.py (one judgment: prompt,
calls, parse, score, cost cap) -> runner.py (many: cache, concurrency, progress). judgment_store.py keeps
every judgment; jury.py combines several gradings (a jury, repeats); batch/ goes through a provider's
Batch API; estimate/ prices what is left to judge. May import the core (`oab_bench.judge`) and the
builder's schema; never a stage above it (leaderboard, validity, audit, generation).
"""
