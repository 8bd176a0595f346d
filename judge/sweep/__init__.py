"""Which judge? Every judge of a sweep probed, compared with a reference judge on the same real answers
and priced; the cheapest still valid one chosen; shown as a table, JSON and a page with a picture."""
