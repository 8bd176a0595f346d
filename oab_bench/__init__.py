"""OAB-Bench: LLMs writing law in Portuguese, graded against the Brazilian Bar Exam's official answers.
litellm's bundled cost map is chosen before any import of litellm: prices offline."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
