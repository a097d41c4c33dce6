"""Metrics over many tasks' graded rollouts: pass@k, majority@k and their spread across runs,
as NeMo Gym's `/aggregate_metrics` reports them.

A rollout is one verify answer (a mapping with `reward` and the environment's fields),
a task the rollouts of one prompt (`_ng_task_index`), kept in the order they came. The
metrics and their names are NeMo Gym's (`nemo_gym.reward_profile`), so its dashboards
and `get_key_metrics` read them unchanged; every accuracy is a percentage:

- `pass@{k}/{name}`: per task, for a score that is 0 or 1 in every rollout, the
  unbiased pass@k estimate over all its rollouts (`group_facts.pass_at_k`, the one the
  group endpoint answers); for any other score the best of its first k; averaged over
  the tasks that have k rollouts.
- `pass@1[avg-of-{k}]/{name}`: the mean over each task's first k rollouts, averaged.
- `majority@{k}/{name}`: per task, the score of the most common answer among the first
  k that hold one (a tie: the mean of the tied answers' scores), 0 for a task with none.
- `pass@1[avg-of-{k}]/{name}/std_dev_across_runs` and `.../std_err_across_runs`: the
  spread of pass@1 between runs (run i being every task's i-th rollout), over the first
  k runs; `.../avg_sample_std_dev`: the mean, over tasks, of the spread inside a task.
- `no_answer`: with an answer field, a score of its own: 1 where a rollout has no answer.

Beside them, `mean/`, `max/`, `min/`, `median/` and `std/` of every numeric field
(booleans as 0 and 1, and the response's token usage), over all rollouts and per task.
Majority votes compare answers in the group endpoint's canonical form (`0.5`, `1/2` and
`\\frac{1}{2}` are one answer), as the scorers' answers are their text; NeMo Gym's
math server votes on math_verify's printed values instead, which unify the same.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from itertools import accumulate
from typing import Any

from reward_service.grading.group_facts import answer_class, pass_at_k

TASK_INDEX = "_ng_task_index"
ROLLOUT_INDEX = "_ng_rollout_index"
NO_ANSWER = "no_answer"
STAT_SUFFIXES = ("std_dev_across_runs", "std_err_across_runs", "avg_sample_std_dev")

Row = Mapping[str, Any]
Scores = Callable[[Row], Mapping[str, float | bool]]


MAX_MAGNITUDE = 1e100
"""Larger numbers are not counted: no reward or token count is one, and their sums and
squares would overflow a float (a body may hold 640-digit integers)."""


def _number(value: Any) -> float | None:
    """`value` as a float when it is a number a statistic can hold (booleans as 0 and 1)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:
        return float(value)
    return None


def _numeric_fields(row: Row) -> dict[str, float]:
    """A rollout's numeric fields and its response's token counts (indices aside)."""
    response = row.get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    merged = {**row, **(usage if isinstance(usage, dict) else {})}
    fields = {}
    for name, value in merged.items():
        number = _number(value)
        if number is not None and name not in (TASK_INDEX, ROLLOUT_INDEX):
            fields[name] = number
    return fields


def describe(rows: Sequence[Row]) -> dict[str, float]:
    """`mean/`, `max/`, `min/`, `median/` and `std/` (n - 1) of each numeric field over `rows`;
    a field with one value gets no spread, unless no field has two (then each field every
    row holds gets 0.0), as NeMo Gym's profiler gives it."""
    columns: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        for name, value in _numeric_fields(row).items():
            columns[name].append(value)
    stats: dict[str, float] = {}
    for name, values in columns.items():
        stats[f"mean/{name}"] = math.fsum(values) / len(values)
        stats[f"max/{name}"] = max(values)
        stats[f"min/{name}"] = min(values)
        stats[f"median/{name}"] = statistics.median(values)
        if len(values) > 1:
            stats[f"std/{name}"] = statistics.stdev(values)
    if not any(len(values) > 1 for values in columns.values()):
        stats.update({f"std/{n}": 0.0 for n, v in columns.items() if len(v) == len(rows)})
    return stats


def tasks_of(rows: Sequence[Row]) -> dict[int, list[Row]]:
    """The rollouts of each task, by task index (0 when absent), in the order they came."""
    tasks: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        index = row.get(TASK_INDEX, 0)
        tasks[index if isinstance(index, int) else 0].append(row)
    return dict(sorted(tasks.items()))


def _vote(answer: Any) -> Hashable:
    """An answer as a vote: its text in the group endpoint's canonical form
    (`group_facts.answer_class`), or its JSON for anything else."""
    if isinstance(answer, str):
        return answer_class(answer)
    if isinstance(answer, int | float):
        return answer
    return json.dumps(answer, sort_keys=True, default=str)


def _percent(values: Sequence[float]) -> float:
    return 100.0 * math.fsum(values) / len(values)


def _task_passes(values: Sequence[float], ks: range) -> list[float]:
    """The task's pass@k for each k in `ks` (each k <= len(values))."""
    if all(v in (0, 1) for v in values):
        correct = sum(1 for v in values if v)
        return [pass_at_k(len(values), correct, k) for k in ks]
    return list(accumulate(values, max))[: len(ks)]


def _task_majorities(
    answers: Sequence[Any], scores: Sequence[float | None], count: int
) -> list[float]:
    """For each k up to `count`: the score of the most common answer among the first k that
    hold one (a tie: the mean of the tied answers' scores; none: 0.0)."""
    votes: Counter[tuple[Hashable, float]] = Counter()
    majorities = []
    for answer, score in zip(answers[:count], scores[:count], strict=True):
        if answer is not None and score is not None:
            votes[(_vote(answer), score)] += 1
        most = max(votes.values(), default=0)
        tied = [voted for (_, voted), n in votes.items() if n == most]
        majorities.append(math.fsum(tied) / len(tied) if tied else 0.0)
    return majorities


def _task_metrics(
    task: Sequence[Mapping[str, float]],
    answers: Sequence[Any],
    names: Sequence[str],
    max_k: int,
    answer_key: str | None,
) -> dict[str, float]:
    """One task's pass@k, pass@1[avg-of-k] and majority@k for each score and each k up to
    `max_k`: pass@k only where the task has k rollouts; the others over the first k it
    has (all of them, for a k past its count)."""
    found: dict[str, float] = {}
    for name in names:
        values = [named[name] for named in task if name in named]
        for k, value in enumerate(_task_passes(values, range(1, len(values) + 1)), 1):
            found[f"pass@{k}/{name}"] = value
        firsts = [named.get(name) for named in task]
        totals = list(accumulate(v or 0.0 for v in firsts))
        held = list(accumulate(int(v is not None) for v in firsts))
        votes = _task_majorities(answers, firsts, len(task)) if answer_key else []
        for k in range(1, max_k + 1):
            last = min(k, len(task)) - 1
            if held[last]:
                found[f"pass@1[avg-of-{k}]/{name}"] = totals[last] / held[last]
            if votes:
                found[f"majority@{k}/{name}"] = votes[last]
    return found


def cost(rows: Sequence[Row]) -> int:
    """What `aggregate` costs, in steps: every rollout once for every k."""
    tasks = tasks_of(rows)
    return len(rows) * max((len(rollouts) for rollouts in tasks.values()), default=0)


def pass_majority(
    tasks: Sequence[Sequence[Row]], scores: Scores, answer_key: str | None = None
) -> dict[str, Any]:
    """pass@k, pass@1[avg-of-k], majority@k (with `answer_key`), their spread across runs and
    inside tasks, and `per_sample_aggregate` (each run's pass@1), for every k up to the
    largest task's rollouts and every score `scores` names."""
    if not tasks:
        return {}
    score_rows: list[list[dict[str, float]]] = []
    answers: list[list[Any]] = []
    for rollouts in tasks:
        task_scores = []
        for row in rollouts:
            named = {
                name: number
                for name, value in scores(row).items()
                if (number := _number(value)) is not None
            }
            if answer_key is not None:
                named[NO_ANSWER] = 1.0 if row.get(answer_key) is None else 0.0
            task_scores.append(named)
        score_rows.append(task_scores)
        answers.append([row.get(answer_key) if answer_key else None for row in rollouts])
    names = sorted({name for task in score_rows for named in task for name in named})
    max_k = max(len(rollouts) for rollouts in tasks)
    found: dict[str, list[float]] = defaultdict(list)
    for task, task_answers in zip(score_rows, answers, strict=True):
        for key, value in _task_metrics(task, task_answers, names, max_k, answer_key).items():
            found[key].append(value)
    metrics: dict[str, Any] = {}
    for k in range(1, max_k + 1):
        for name in names:
            for kind in (f"pass@{k}", f"pass@1[avg-of-{k}]", f"majority@{k}"):
                if found.get(f"{kind}/{name}"):
                    metrics[f"{kind}/{name}"] = _percent(found[f"{kind}/{name}"])
    runs = _per_run(score_rows, names, max_k)
    metrics["per_sample_aggregate"] = runs
    for k in range(2, max_k + 1):
        for name in names:
            _spread(metrics, f"pass@1[avg-of-{k}]/{name}", runs.get(name, [])[:k])
            _within_tasks(metrics, f"pass@1[avg-of-{k}]/{name}", score_rows, name, k)
    return metrics


def _per_run(
    score_rows: Sequence[Sequence[Mapping[str, float]]], names: Sequence[str], max_k: int
) -> dict[str, list[float]]:
    """Each score's pass@1 in run i (every task's i-th rollout), for each run that has it."""
    runs: dict[str, list[float]] = {}
    for name in names:
        for i in range(max_k):
            values = [t[i][name] for t in score_rows if i < len(t) and name in t[i]]
            if values:
                runs.setdefault(name, []).append(_percent(values))
    return runs


def _spread(metrics: dict[str, Any], key: str, run_means: Sequence[float]) -> None:
    if len(run_means) >= 2:
        deviation = statistics.stdev(run_means)
        metrics[f"{key}/std_dev_across_runs"] = deviation
        metrics[f"{key}/std_err_across_runs"] = deviation / math.sqrt(len(run_means))


def _within_tasks(
    metrics: dict[str, Any],
    key: str,
    score_rows: Sequence[Sequence[Mapping[str, float]]],
    name: str,
    k: int,
) -> None:
    deviations = []
    for task in score_rows:
        values = [named[name] for named in task[:k] if name in named]
        if len(values) >= 2:
            deviations.append(statistics.stdev(values))
    if deviations:
        metrics[f"{key}/avg_sample_std_dev"] = math.fsum(deviations) / len(deviations)


def highest_k(
    metrics: Mapping[str, Any], pattern: str, exclude: Sequence[str] = ()
) -> dict[str, Any]:
    """The entries named `pattern` (`{k}` standing for k) at the largest k, spreads and the
    `exclude`d scores left out: NeMo Gym's headline selection."""
    regex = re.compile("^" + re.escape(pattern).replace(r"\{k\}", r"(\d+)") + "/(.+)$")
    found = []
    for key in metrics:
        match = regex.match(key)
        if match and not match[2].endswith(STAT_SUFFIXES) and match[2] not in exclude:
            found.append((int(match[1]), key))
    top = max((k for k, _ in found), default=None)
    return {key: metrics[key] for k, key in found if k == top}


def key_metrics(agent: Mapping[str, Any]) -> dict[str, Any]:
    """The headline metrics: mean reward and tokens, and pass@1 averaged, pass@k and
    majority@k at the largest k."""
    key = {
        name: agent[name]
        for name in ("mean/reward", "mean/input_tokens", "mean/output_tokens")
        if name in agent
    }
    key.update(highest_k(agent, "pass@1[avg-of-{k}]"))
    key.update(highest_k(agent, "pass@{k}", exclude=(NO_ANSWER,)))
    key.update(highest_k(agent, "majority@{k}", exclude=(NO_ANSWER,)))
    return key


def aggregate(rows: Sequence[Row], scores: Scores, answer_key: str | None = None) -> dict[str, Any]:
    """NeMo Gym's `AggregateMetrics` of `rows`: `group_level_metrics` (per task),
    `agent_metrics` (over all rollouts, with pass@k and majority@k) and `key_metrics`."""
    if not rows:
        return {"group_level_metrics": [], "agent_metrics": {}, "key_metrics": {}}
    tasks = tasks_of(rows)
    groups = [
        {TASK_INDEX: index, **describe(rollouts), "num_rollouts": len(rollouts)}
        for index, rollouts in tasks.items()
    ]
    agent: dict[str, Any] = describe(rows)
    agent.update(pass_majority(list(tasks.values()), scores, answer_key))
    return {
        "group_level_metrics": groups,
        "agent_metrics": agent,
        "key_metrics": key_metrics(agent),
    }
