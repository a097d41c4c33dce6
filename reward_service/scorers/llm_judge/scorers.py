"""The judge scorers: `judge` (a model decides equivalence) and `math_judge` (math_verify
first, the model only where the rule found no match).

Both ask one `JudgeEndpoint` (shared, `REWARD_JUDGE__*`) and never guess: an
answer the judge gave no verdict on is status `judge_failed` with the fallback
reward, or, with `on_outage=retry_later`, an endpoint outage is a 503 with
`Retry-After`. The judge is shown the answer region (`scorers.reasoning`, option
`think`) as `answer` shows it, framed by `prompt`; an answer that
wrote to the grader is never cached. `math_judge` never overrides the rule's
`ok`, and overturns its `wrong` only by judging the answer the rule extracted
(`pred`), never the text around it; `?detail=1` says which decided (`path`:
`rule` or `judge`) and what the judge was shown (`judged`: `answer` or `pred`).
"""

from __future__ import annotations

import importlib.util
import string
from collections.abc import Mapping
from typing import ClassVar

from reward_service.errors import InvalidSetting, JudgeUnavailable
from reward_service.redaction import redact
from reward_service.scorers.base import (
    JSON,
    AsyncScorer,
    GradingLimits,
    Score,
    ScorerSettings,
    StartupCheck,
    Status,
)
from reward_service.scorers.labels import gold_texts
from reward_service.scorers.llm_judge import client as judge_client
from reward_service.scorers.llm_judge.answer import shown_answer
from reward_service.scorers.llm_judge.client import OUTAGES, JudgeEndpoint, Outcome
from reward_service.scorers.llm_judge.prompt import (
    EQUIVALENCE_TEMPLATE,
    TemplateError,
    Verdict,
    check_template,
    fresh_nonce,
    question_text,
    render,
)
from reward_service.scorers.llm_judge.settings import JudgeSettings
from reward_service.scorers.math_verify.scorer import EXTRACTION_MODES
from reward_service.scorers.reasoning import THINK_MODES, Unanswered, final_answer

DEFAULT_TEMPLATE = "default"
"""The `template` option's name for the prompt used when none is asked: ours, or
`template_file`'s."""
PARTIAL_REWARDS = {"zero": 0.0, "half": 0.5, "full": 1.0}
"""Option `partial`: the reward of a `PARTIAL` verdict."""
JUDGE_ON = {
    "wrong": frozenset({Status.WRONG}),
    "no_answer": frozenset({Status.NO_ANSWER}),
    "both": frozenset({Status.WRONG, Status.NO_ANSWER}),
}
"""Option `judge_on` of `math_judge`: the rule's statuses the judge looks at again."""
RULE = "math_verify"
RULE_OPTIONS = ("extraction", "think")
"""The options `math_judge` passes on to its rule."""


def load_templates(settings: JudgeSettings) -> dict[str, string.Template]:
    """The prompt templates by name: `default` (the file's when set, else ours) and the named
    ones; `TemplateError` or `OSError` for one that cannot be used."""
    files = {DEFAULT_TEMPLATE: settings.template_file, **settings.templates}
    return {
        name: check_template(
            EQUIVALENCE_TEMPLATE if path is None else path.read_text(encoding="utf-8")
        )
        for name, path in files.items()
    }


class JudgeScorer(AsyncScorer):
    """`judge`: is the final answer (the answer region, option `think`) equivalent to the label?"""

    name = "judge"
    correct_is_label = True
    settings_model = JudgeSettings
    settings_name = "judge"
    deadline_s = 60.0
    concurrency = 65536
    """Answers waiting on the judge may be many (cache hits need no call); the endpoint's
    own cap is `REWARD_JUDGE__CONCURRENCY`."""
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {
        "template": None,
        "model": None,
        "partial": frozenset(PARTIAL_REWARDS),
        "think": THINK_MODES,
    }

    def __init__(
        self, limits: GradingLimits | None = None, settings: ScorerSettings | None = None
    ) -> None:
        super().__init__(limits, settings)
        assert isinstance(self.settings, JudgeSettings)
        self.judge_settings: JudgeSettings = self.settings
        self.templates = load_templates(self.settings)
        self.endpoint: JudgeEndpoint | None = None

    @classmethod
    def startup_check(
        cls, settings: ScorerSettings | None, limits: GradingLimits
    ) -> StartupCheck | None:
        assert isinstance(settings, JudgeSettings)
        try:
            load_templates(settings)
            settings.key()
        except (OSError, TemplateError) as exc:
            raise InvalidSetting(f"judge settings: {exc}") from None
        deadline = limits.deadline_for(cls)
        if settings.deadline_s >= deadline:
            raise InvalidSetting(
                f"REWARD_JUDGE__DEADLINE_S ({settings.deadline_s}) must be below {cls.name}'s "
                f"deadline ({deadline} s, REWARD_SCORER_DEADLINES) so a slow judge gives "
                "judge_failed, not timeout"
            )
        client = importlib.util.find_spec("openai") is not None
        if not settings.base_url or not settings.model:
            extra = "" if client else " (and install the judge extra: 'reward-service[judge]')"
            return StartupCheck(
                False,
                f"no judge endpoint: set REWARD_JUDGE__BASE_URL and REWARD_JUDGE__MODEL{extra}; "
                "until then answers are judge_failed",
                configured=False,
            )
        if not client:
            raise InvalidSetting(
                "REWARD_JUDGE__BASE_URL is set but the judge client is not installed: "
                "pip install 'reward-service[judge]'"
            )
        details: dict[str, JSON] = {
            "base_url": redact(settings.base_url),
            "model": settings.model,
            "concurrency": settings.concurrency,
            "on_outage": settings.on_outage,
        }
        return StartupCheck(
            True, f"judge {details['base_url']} model {settings.model}", details=details
        )

    async def open(self) -> None:
        self.endpoint = await judge_client.acquire(self.judge_settings)

    async def close(self) -> None:
        self.endpoint = None
        await judge_client.release(self.judge_settings)

    async def score(
        self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]
    ) -> Score:
        return await self.judged(prompt, response, label, options)

    async def judged(
        self,
        prompt: JSON,
        response: str,
        label: JSON,
        options: Mapping[str, JSON],
        **details: JSON,
    ) -> Score:
        """The judge's grade of `response`'s final answer against `label`."""
        region = final_answer(response, options)
        if isinstance(region, Unanswered):
            return region.score(path="judge", **details)
        return await self.judge_answer(prompt, region, label, options, judged="answer", **details)

    async def judge_answer(
        self,
        prompt: JSON,
        answer: str,
        label: JSON,
        options: Mapping[str, JSON],
        **details: JSON,
    ) -> Score:
        """The judge's grade of `answer` itself (no reasoning to skip) against `label`."""
        golds = gold_texts(label)
        if isinstance(golds, str):
            return Score.error(golds, path="judge", **details)
        shown = shown_answer(answer, self.judge_settings.max_answer_chars)
        if not shown.text:
            return Score.no_answer("no final answer after the reasoning", path="judge", **details)
        if shown.markers:
            details = {**details, "markers": sorted(shown.markers)}
        if shown.cut:
            details = {**details, "cut": shown.cut}
        model = options.get("model", self.judge_settings.model)
        known = {self.judge_settings.model, *self.judge_settings.models}
        if not isinstance(model, str) or model not in known:
            return Score.error("option model names a model REWARD_JUDGE__MODELS does not list")
        partial = PARTIAL_REWARDS.get(str(options.get("partial", "zero")))
        if partial is None:
            return Score.error(f"option partial takes one of {', '.join(PARTIAL_REWARDS)}")
        template = self.templates.get(str(options.get("template", DEFAULT_TEMPLATE)))
        if template is None:
            return Score.error(f"option template takes one of {', '.join(sorted(self.templates))}")
        if self.endpoint is None:  # not opened: no engine serves this instance
            return self._score(Outcome(None, "not_configured"), partial, details)
        reference = golds[0] if len(golds) == 1 else "any one of: " + " ; ".join(golds)
        question = question_text(prompt)
        nonce = fresh_nonce(question, reference, shown.text)
        key = (template.template, model, question, reference, shown.text)
        outcome = await self.endpoint.judge(
            key,
            render(template, question, reference, shown.text, nonce),
            model,
            cache=not shown.markers,
        )
        return self._score(outcome, partial, details)

    def _score(self, outcome: Outcome, partial: float, details: dict[str, JSON]) -> Score:
        facts = {"path": "judge", "cache": outcome.cache, "judge": outcome.facts(), **details}
        if outcome.verdict is None:
            kind = outcome.failure or "no_verdict"
            if self.judge_settings.on_outage == "retry_later" and kind in OUTAGES:
                raise JudgeUnavailable(
                    f"the judge endpoint is unavailable ({kind})", outcome.retry_after_s
                )
            return Score(0.0, Status.JUDGE_FAILED, {"reason": f"judge failed: {kind}", **facts})
        reward = {Verdict.CORRECT: 1.0, Verdict.INCORRECT: 0.0}.get(outcome.verdict, partial)
        status = Status.OK if reward > 0 else Status.WRONG
        return Score(reward, status, {"verdict": outcome.verdict.value, **facts})


class MathJudgeScorer(JudgeScorer):
    """`math_judge`: math_verify's grade (in a worker); the judge only where it says `wrong`
    or `no_answer` (option `judge_on`), never over its `ok`. A `wrong` is judged on the
    answer the rule extracted (`pred`) alone; a `no_answer` on the answer region."""

    name = "math_judge"
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {
        **JudgeScorer.options,
        "extraction": EXTRACTION_MODES,
        "judge_on": frozenset(JUDGE_ON),
    }

    async def score(
        self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]
    ) -> Score:
        wanted = JUDGE_ON.get(str(options.get("judge_on", "both")))
        if wanted is None:
            return Score.error(f"option judge_on takes one of {', '.join(JUDGE_ON)}")
        rule_options = {k: v for k, v in options.items() if k in RULE_OPTIONS}
        rule = await self.grade_in_worker(RULE, prompt, response, label, rule_options)
        facts: dict[str, JSON] = {"status": rule.status.value, **rule.details}
        kept = Score(rule.reward, rule.status, {"path": "rule", "rule": facts})
        if rule.status not in wanted:
            return kept
        if rule.status is Status.WRONG:
            pred = rule.details.get("pred")
            if not isinstance(pred, str) or not pred.strip():
                return kept
            return await self.judge_answer(prompt, pred, label, options, judged="pred", rule=facts)
        return await self.judged(prompt, response, label, options, rule=facts)
