"""Share judged results as a Hub dataset: the export (rows, card) that `push-results` uploads behind the
Hub guard. The layout and its reader are in the judge core, so every reader takes `hf:` results back."""
