"""The bill before it is paid: `--estimate` counts the prompt tokens of every judgment still to
make, expects completion tokens from the cache's own history for the judge, and prices both,
for direct calls and for a Batch API; it calls nothing. `--max-cost-usd` uses the same expectation.

core.py computes and prints (imports litellm); flags.py adds the flags (imports nothing heavy,
so building the CLI parser stays fast).
"""
