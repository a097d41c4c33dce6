"""The `code` scorer: programs from responses, run against the label's tests in the sandbox.

`extract` finds the program, `cases` reads the label's tests, `drivers` wraps
call-based and assert-style tests into programs, `compare` judges outputs,
`scorer` runs them all through a `reward_service.sandbox.Sandbox`.
"""
