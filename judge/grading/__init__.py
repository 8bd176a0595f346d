"""Grade: one judge (or a jury) scoring answers item by item against the rubric; code adds the scores.
Flow: prompts -> reply schema -> client (one call) -> grader (one judgment) -> runner (many); the
module map is in docs/architecture.md."""
