"""`--panel`: published answers judged beside the candidate, by the same judge (docs/panel.md). The
leaderboard and the audit report read the marked records without importing this stage."""
