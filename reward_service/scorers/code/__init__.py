"""The `code` scorer: programs from responses, run against the label's tests in the sandbox.

`fences` finds the program, `cases` reads the label's tests, `drivers` wraps
call-based and assert-style tests into programs, `compare` judges outputs,
`judge` (`CodeScorer`) runs them all through a `reward_service.sandbox.Sandbox`.
"""
