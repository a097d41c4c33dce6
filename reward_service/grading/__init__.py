"""The grading runtime: worker processes, deadlines, screening and fallbacks.

engine     `ScoringEngine`: screens in the server, dispatches to workers, applies fallbacks
deadlines  `resolve_deadlines`: which hard deadline each scorer's gradings get
groups     `grade_group`: one prompt's answers graded together, each distinct response once
group_facts  what a graded group tells a trainer: mean, spread, all-equal, distinct answers, pass@k
pool       `WorkerPool`: worker processes driven from the event loop, deadlines, respawns
sample     `Sample`: one answer to grade, with its label and the scorer chosen for it
worker     what runs inside a worker: its loop, its set-up (`WorkerConfig`), its grading
"""
