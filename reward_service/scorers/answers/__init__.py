"""Answer checks of our own: `exact` (the answer region equals the label) and `choice`
(multiple-choice letters, GPQA / MMLU style)."""
