"""`reward-service bench`: the service against plain math_verify, in one run.

runner      the command: both sides, ratios, CPU per answer, memory
workload    GRPO-shaped answers with known rewards (also the load tests' traffic)
reference   plain math_verify `parse`/`verify`, the reference every verdict is held to
"""
