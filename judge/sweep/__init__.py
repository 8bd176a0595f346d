"""The stage that answers "which judge?": every judge of a sweep probed, compared with a reference
judge on the same real answers and priced, then the cheapest one that is still valid chosen."""
