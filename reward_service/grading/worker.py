"""What runs inside a grading worker, and nothing that runs in the server.

The server's side of the same processes lives in `grading.pool` (spawning,
deadlines, replacing the dead) and `grading.engine` (what to grade, fallbacks),
as gunicorn keeps its arbiter apart from its workers. The forkserver preloads
this module and the scorers' modules, never the engine, so each new worker
forks with what it runs already imported.

serve     the loop every worker runs: receive a task, run it, send back its result
set_up    a grading worker's start: priority, memory cap, its CPU-bound scorers opened and warm
grade     one task: answers graded by one scorer, every failure a status
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection

from reward_service.scorers import GradingLimits, Score, ScorerRegistry
from reward_service.scorers.base import Scorer, ScorerSettings, ScoringInput
from reward_service.scorers.composite import CompositeDefinition

READY = "ready"
"""A worker's first message: it is set up and takes tasks."""
_PR_SET_DUMPABLE = 4


@dataclass(frozen=True, kw_only=True)
class WorkerConfig:
    """What each grading worker is set up with (`set_up`), sent to it as it starts."""

    limits: GradingLimits
    """The service's limits, every scorer's resolved deadline included."""
    memory_mb: int
    """The worker's address-space cap, in MiB."""
    nice: int
    """Niceness added to the worker, below the server."""
    extra_scorers: Mapping[str, str]
    """Scorers without packaging, `{"name": "module:Class"}` (`REWARD_EXTRA_SCORERS`)."""
    composites: Mapping[str, CompositeDefinition]
    """The composite scorers (`REWARD_COMPOSITES`), validated by the engine, by name."""
    scorer_settings: Mapping[str, ScorerSettings]
    """Each scorer's own settings, read and checked by the engine, by scorer name."""
    only: Sequence[str] | None = None
    """Serve just these scorers (`reward-service score`); None: every one."""
    warm: bool = True
    """Warm the scorers before taking work (`Scorer.warm`); a one-shot command's worker,
    which grades a single answer, is not."""


_registry: ScorerRegistry | None = None
"""This worker's scorers, built by `set_up`."""


def serve(
    tasks: Connection,
    results: Connection,
    initializer: Callable[[], None],
    inherited: Sequence[Connection] = (),
) -> None:
    """The loop each worker runs: set up, say `READY`, then receive a task, run it, send
    `(True, result)` or `(False, "<Error>: <message>")`, until the pool sends None or its
    end of `tasks` closes. `inherited`: the pool's own ends, which a forked worker holds
    and closes at once."""
    for connection in inherited:
        connection.close()
    # Not dumpable, as the server: no process of its uid (a model-written program where
    # nothing confines reads) opens its /proc/<pid>/fd (the next task, expected outputs
    # included) or reads its memory or environ.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    initializer()
    results.send(READY)
    while True:
        try:
            task = tasks.recv()
        except EOFError:
            return
        if task is None:
            return
        fn, args = task
        try:
            results.send((True, fn(*args)))
        except BaseException as exc:  # report, never die, for any task error
            results.send((False, f"{type(exc).__name__}: {exc}"))


def set_up(*, config: WorkerConfig) -> None:
    """Runs once in each grading worker: lower its priority, cap its memory, build the
    CPU-bound scorers (those of `config.only`, when given), open them (a zygote
    started here inherits both) and, unless `config.warm` is false, warm them
    (`Scorer.warm`), all before the worker says it is ready."""
    global _registry
    os.nice(config.nice)
    cap = config.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    registry = ScorerRegistry.discover(
        config.limits, dict(config.extra_scorers), config.scorer_settings, config.composites
    )
    _registry = registry if config.only is None else registry.only(config.only)
    built = _registry.build(Scorer)
    for scorer in built:
        assert isinstance(scorer, Scorer)
        scorer.open()
    for scorer in built if config.warm else ():
        assert isinstance(scorer, Scorer)
        scorer.warm()


def grade(scorer: str, items: list[ScoringInput]) -> list[Score]:
    """Grade `items` with scorer `scorer`, every failure a status: a scorer's bug costs the
    answers it raised on (several are graded again one by one), never the worker."""
    assert _registry is not None, "worker not set up"
    try:
        graded = _registry.get(scorer)
        assert isinstance(graded, Scorer)
        scores = graded.score_many(items)
    except MemoryError:
        return [Score.error("worker memory cap reached")] * len(items)
    except Exception as exc:  # a scorer bug must cost its answers, not the worker
        if len(items) > 1:  # nor its neighbours' in a task of several (a batch, a group)
            return [score for item in items for score in grade(scorer, [item])]
        return [Score.error(f"scorer raised {type(exc).__name__}")] * len(items)
    if len(scores) != len(items):
        return [Score.error(f"scorer returned {len(scores)} scores for {len(items)}")] * len(items)
    return scores
