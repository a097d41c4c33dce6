"""LLM-as-judge scorers: a model on an OpenAI-compatible endpoint decides equivalence.

`judge_settings` (the endpoint and its bounds), `judge_answer` (the answer as the
judge is shown it: text addressed to the grader removed, bounded), `judge_prompt`
(the prompt framed by a per-call nonce, strict verdicts carrying it),
`judge_limits` (rate limits and the circuit breaker), `judge_client` (calls,
cache, one shared client per endpoint) and `judge_scorers` (`judge`,
`math_judge`). See docs/judge.md.
"""
