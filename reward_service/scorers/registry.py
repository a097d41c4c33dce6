"""Scorers by name: the built-ins plus those installed as plugins.

A third-party package adds a scorer with an entry point, no fork needed::

    [project.entry-points."reward_service.scorers"]
    my_scorer = "my_package.module:MyScorer"

The entry point names a `Scorer` or `AsyncScorer` subclass; its `name`
attribute is the name served at `/score/<name>`, and it may declare settings of
its own, a start-up check and resources (`scorers.base`). Every scorer `<name>` is also served as
`boxed_<name>`: SLIME's prefix, grading the content of the last `\\boxed{}`. Composite scorers
(`scorers.composite`), defined in the settings, are served by their names too.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Collection, Mapping
from importlib.metadata import entry_points

from reward_service.errors import ScorerLoadError, UnknownScorer
from reward_service.scorers.base import (
    AsyncScorer,
    GradingLimits,
    Scorer,
    ScorerBase,
    ScorerSettings,
)
from reward_service.scorers.boxed import BOXED_PREFIX, BoxedScorer, boxed_scorer
from reward_service.scorers.composite import (
    CompositeDefinition,
    CompositeScorer,
    composite_scorer,
)

ENTRY_POINT_GROUP = "reward_service.scorers"
_KINDS = (ScorerBase, Scorer, AsyncScorer)
"""The contract's own classes, which no target may name."""

BUILTINS: dict[str, str] = {
    "math_verify": "reward_service.scorers.math_verify.scorer:MathVerifyScorer",
    "exact": "reward_service.scorers.answers.exact:ExactScorer",
    "math": "reward_service.scorers.slime.math:MathScorer",
    "deepscaler": "reward_service.scorers.slime.deepscaler:DeepScalerScorer",
    "dapo": "reward_service.scorers.slime.dapo:DapoScorer",
    "f1": "reward_service.scorers.slime.f1:F1Scorer",
    "choice": "reward_service.scorers.answers.choice:ChoiceScorer",
    "gpqa": "reward_service.scorers.slime.gpqa:GpqaScorer",
    "random": "reward_service.scorers.slime.random_reward:RandomScorer",
    "code": "reward_service.scorers.code.scorer:CodeScorer",
    "ifeval": "reward_service.scorers.instructions.scorers:IfEvalScorer",
    "ifbench": "reward_service.scorers.instructions.scorers:IfBenchScorer",
    "run_code": "reward_service.scorers.code.run_code:RunCodeScorer",
    "judge": "reward_service.scorers.llm_judge.scorers:JudgeScorer",
    "math_judge": "reward_service.scorers.llm_judge.scorers:MathJudgeScorer",
}
"""Built-in scorers by name, as `module:Class` so nothing heavy loads early."""


def _extra_installed(*modules: str) -> bool:
    """True when every module of an optional extra can be imported (none is imported)."""
    return all(importlib.util.find_spec(module) is not None for module in modules)


if _extra_installed("torch", "transformers"):  # the `rm` extra
    BUILTINS["reward_model"] = "reward_service.scorers.reward_model.scorer:RewardModelScorer"


def _load_class(target: str) -> type[ScorerBase]:
    module_name, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ScorerLoadError(f"cannot load scorer {target!r}: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, ScorerBase)) or cls in _KINDS:
        raise ScorerLoadError(f"{target!r} is not a Scorer or AsyncScorer subclass")
    return cls


class ScorerRegistry:
    """Maps scorer names to lazily built scorer instances, each with its own settings.

    Besides its targets it serves `boxed_<name>` for each target `<name>`
    (SLIME's `boxed_` prefix, see `scorers.boxed`), unless a target of that
    name exists; there is no `boxed_boxed_<name>`. It serves each of `composites` by its
    name, its scorer components being CPU-bound scorers it serves (checked by `require`).
    """

    def __init__(
        self,
        targets: dict[str, str],
        limits: GradingLimits | None = None,
        settings: Mapping[str, ScorerSettings] | None = None,
        composites: Mapping[str, CompositeDefinition] | None = None,
    ) -> None:
        self._targets = dict(targets)
        self._limits = limits or GradingLimits()
        self._settings = dict(settings or {})
        self._composites = dict(composites or {})
        for name in self._composites:
            if name in self._targets:
                raise ScorerLoadError(f"composite {name!r} has the name of a scorer")
        self._instances: dict[str, ScorerBase] = {}
        self._classes: dict[str, type[ScorerBase]] = {}
        self._boxed = {
            BOXED_PREFIX + name: name
            for name in self._targets
            if not name.startswith(BOXED_PREFIX) and BOXED_PREFIX + name not in self._targets
        }

    @classmethod
    def discover(
        cls,
        limits: GradingLimits | None = None,
        extra: dict[str, str] | None = None,
        settings: Mapping[str, ScorerSettings] | None = None,
        composites: Mapping[str, CompositeDefinition] | None = None,
    ) -> ScorerRegistry:
        """Built-ins, every installed `reward_service.scorers` plugin, then `extra`; and
        `composites`."""
        targets = dict(BUILTINS)
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            targets.setdefault(ep.name, ep.value)
        targets.update(extra or {})
        return cls(targets, limits, settings, composites)

    def names(self) -> list[str]:
        """Every name served, `boxed_<name>` ones and composites included."""
        return sorted([*self._targets, *self._boxed, *self._composites])

    def composites(self) -> dict[str, CompositeDefinition]:
        """The composite scorers served, by name."""
        return dict(self._composites)

    def targets(self) -> list[str]:
        """The scorers themselves, without their `boxed_<name>` variants."""
        return sorted(self._targets)

    def base_of(self, name: str) -> str:
        """The scorer `name` grades with: `<type>` for `boxed_<type>`, else `name`."""
        return self._boxed.get(name, name)

    def configured(
        self, limits: GradingLimits, settings: Mapping[str, ScorerSettings]
    ) -> ScorerRegistry:
        """This registry's scorers, built with `limits` and `settings` (by scorer name)."""
        return ScorerRegistry(self._targets, limits, settings, self._composites)

    def only(self, names: Collection[str]) -> ScorerRegistry:
        """This registry narrowed to the scorers `names` grade with (`boxed_<type>`: `<type>`),
        so nothing else is imported, checked or opened (`reward-service score`)."""
        for name in names:
            self.require(name)
        composites = {n: d for n, d in self._composites.items() if n in names}
        parts = {part for d in composites.values() for part in d.scorers().values()}
        wanted = {self.base_of(name) for name in {*names, *parts} if name not in composites}
        targets = {name: target for name, target in self._targets.items() if name in wanted}
        return ScorerRegistry(targets, self._limits, self._settings, composites)

    def modules(self) -> list[str]:
        """The modules to preload in worker parents: those that define the scorers, then
        those the CPU-bound scorers name in `Scorer.preload`."""
        defining = {target.partition(":")[0] for target in self._targets.values()}
        scorers = sorted(defining | {BoxedScorer.__module__, CompositeScorer.__module__})
        classes = [self.scorer_class(name) for name in self._targets]
        named = [m for cls in classes if issubclass(cls, Scorer) for m in cls.preload]
        return scorers + [module for module in dict.fromkeys(named) if module not in scorers]

    def __contains__(self, name: object) -> bool:
        return name in self._targets or name in self._boxed or name in self._composites

    def require(self, name: str) -> None:
        """Raise `UnknownScorer` (listing the known names) unless `name` exists."""
        if name not in self:
            raise UnknownScorer(name, self.names())

    def check_composites(self) -> None:
        """Raise `ScorerLoadError` unless every composite's scorer components are CPU-bound
        scorers this registry serves (not composites): run at start-up."""
        for composite in self._composites:
            self.scorer_class(composite)

    def scorer_class(self, name: str) -> type[ScorerBase]:
        """The class of scorer `name`, imported but not built (for `screen`).

        Found once per name and kept: the server asks for it several times
        per answer (screen, batch size, deadline).
        """
        cls = self._classes.get(name)
        if cls is None:
            self.require(name)
            inner = self._boxed.get(name)
            definition = self._composites.get(name)
            if definition is not None:
                cls = composite_scorer(name, definition, self._parts(name, definition))
            elif inner is not None:
                cls = boxed_scorer(self.scorer_class(inner), inner)
            else:
                cls = _load_class(self._targets[name])
            self._classes[name] = cls
        return cls

    def _parts(self, name: str, definition: CompositeDefinition) -> dict[str, type[Scorer]]:
        """The classes of composite `name`'s scorer components, each checked to be servable."""
        parts = {}
        for component, scorer in definition.scorers().items():
            if scorer not in self or scorer in self._composites:
                raise ScorerLoadError(
                    f"composite {name!r}: component {component!r} names {scorer!r}, "
                    "which is no scorer served here (composites do not nest)"
                )
            cls = self.scorer_class(scorer)
            if not issubclass(cls, Scorer):
                raise ScorerLoadError(
                    f"composite {name!r}: component {component!r} names {scorer!r}, an "
                    "I/O-bound scorer; a composite runs in a grading worker, so only CPU-bound "
                    "scorers can be its parts"
                )
            parts[component] = cls
        return parts

    def get(self, name: str) -> ScorerBase:
        """The scorer called `name`, built on first use with its settings."""
        self.require(name)
        scorer = self._instances.get(name)
        if scorer is None:
            inner = self._boxed.get(name)
            settings = self._settings.get(inner or name)
            definition = self._composites.get(name)
            if definition is not None:
                composite = self.scorer_class(name)
                assert issubclass(composite, CompositeScorer)
                parts = {c: self.get(s) for c, s in definition.scorers().items()}
                scorer = composite(self._limits, None, parts)  # type: ignore[arg-type]
            elif inner is None:
                cls = _load_class(self._targets[name])
                # a scorer without settings of its own may take `limits` alone
                scorer = cls(self._limits) if settings is None else cls(self._limits, settings)
            else:
                shared = self.get(inner)
                boxed = boxed_scorer(type(shared), inner)
                scorer = boxed(self._limits, settings, shared)  # type: ignore[arg-type]
            self._instances[name] = scorer
        return scorer

    def build(self, kind: type[ScorerBase]) -> list[ScorerBase]:
        """Build every scorer of `kind` (`Scorer`: a worker's; `AsyncScorer`: the server's),
        `boxed_<name>` ones included; the scorers themselves, to open, are returned."""
        built = []
        for name in self.names():
            if issubclass(self.scorer_class(name), kind):
                scorer = self.get(name)
                if name in self._targets:
                    built.append(scorer)
        return built
