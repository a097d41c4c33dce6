"""Scorers that run programs from responses in the sandbox: `code` and `run_code`.

`fences` finds the program, `cases` reads the label's tests, `drivers` wraps
call-based and assert-style tests into programs, `compare` judges outputs,
`scorer` (`CodeScorer`) runs them all through a `reward_service.sandbox.Sandbox`.
`run_code` (`RunCodeScorer`) runs a program as given, described by `run_request`;
`sandboxed` is the base both share, `settings` their settings and start-up check.
"""
