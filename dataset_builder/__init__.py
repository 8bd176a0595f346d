"""Upstream OAB-Bench files -> validated, rubric-parsed rows -> a Hub dataset folder; knows nothing of
the judge: it turns the official answer standard into numbers that add up."""
