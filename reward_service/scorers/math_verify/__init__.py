"""The `math_verify` scorer: HuggingFace math_verify, configured and sped up for RL.

    scorer    `MathVerifyScorer`: the grading, its paths and caches
    inline    integer answers settled in the server process, with the proof
    extract   the deciding box found as math_verify would find it, with the proof
    values    plain-number answers read straight into math_verify's sympy values
    hazards   linear screening for answers that would stall sympy

Only `scorer`, `inline` and `hazards` may be imported in the server process:
`extract` and `values` import math_verify and sympy, which load in workers.
"""
