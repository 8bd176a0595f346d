"""Thin entry points: the `oab-bench` CLI, `oab-bench run`, and benchmark scripts."""
