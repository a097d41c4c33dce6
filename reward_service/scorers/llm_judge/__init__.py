"""LLM-as-judge scorers: a model on an OpenAI-compatible endpoint decides equivalence.

`settings` (the endpoint and its bounds), `answer` (the answer as the
judge is shown it: text addressed to the grader removed, bounded), `prompt`
(the prompt framed by a per-call nonce, strict verdicts carrying it),
`limits` (rate limits and the circuit breaker), `client` (calls,
cache, one shared client per endpoint) and `scorers` (`judge`,
`math_judge`). See docs/judge.md.
"""
