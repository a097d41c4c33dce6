"""What the confined campaigns against the sandbox run on, apart from the tests themselves.

`confine` (PID 1 of the namespace every hostile program runs in), `platforms`
(profiles that take layers away), `procs` (the processes /proc shows),
`hostile_programs` and `hostile_native` (the attacks, in Python and C++),
`runner` (runs them against a sandbox: `test_hostile.py`), `neighbours` (two
zygotes side by side: `test_neighbours.py`), `summary` (tables a campaign's
reports). `tests/server/test_hostile_code.py` runs the same attacks through a
live server.
"""
