"""`reward-service bench`: the service against plain graders, in one run.

bench_command         the command: each workload's sides, ratios, CPU per answer, memory
judge_bench           `--workload judge`: the judge scorer against its endpoint's capacity
group_bench           `--workload grpo`: groups through the group endpoint against /score/batch
measure               what both measure with: the two clients, /metrics, CPU shares, lines
workload              GRPO-shaped answers with known rewards (also the load tests' traffic)
reference             plain math_verify `parse`/`verify`, the reference every verdict is held to
code_workload         the `code` workload and its naive baseline (a subprocess per test)
cpp_workload          the `code-cpp` workload and its naive baseline (g++, then a subprocess)
instruction_workload  the `ifeval` workload and its plain grader (if-verifiable's own API)
run_code_bench        `--workload run_code`: /run_code runs, some sleeping, against unconfined ones
chat_stand_in         a stand-in OpenAI-compatible judge of known behaviour and latency
"""
