"""The stage that answers "which judge?": every judge of a sweep probed, compared with a reference
judge on the same real answers (the panel's published ones by default) and priced, then the
cheapest one that is still valid chosen; shown as a table, JSON and a page with a picture."""
