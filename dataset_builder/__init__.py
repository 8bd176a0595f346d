"""Upstream OAB-Bench files -> validated, rubric-parsed rows -> a Hub dataset folder.

This package knows nothing of the judge: it only turns the official answer
standard into numbers that add up.
"""
