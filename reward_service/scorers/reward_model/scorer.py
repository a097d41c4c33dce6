"""`reward_model`: a Hugging Face sequence-classification reward model on CPU.

Needs the `rm` extra (`pip install 'reward-service[rm]'`: torch and
transformers); without it the scorer is not registered. The reward is the
model's raw logit with status `ok` (a reward model has no notion of wrong);
the label is not used.

The model (`REWARD_REWARD_MODEL__NAME`: a local directory, or a model already
in the Hugging Face cache; workers never download, since a download would
run under a grading deadline) is loaded on a worker's first `reward_model`
grading, so workers that never grade with it never hold it. Torch and
transformers are imported only then: the server process and idle workers
never load them.

What the model reads: with a chat template, the prompt's messages plus the
response as the assistant turn, rendered by the template, as one sequence;
without one (OpenAssistant's DeBERTa models), the (question, answer) pair.
Past `REWARD_REWARD_MODEL__MAX_LENGTH` tokens, tokens are cut from the start
(of the longer of question and answer, for a pair), so the end of the answer
is always read. Before tokenizing, each text is cut to its last
`CHARS_PER_TOKEN * max_length` characters, which hold more tokens than the
model reads, so a 1 MB answer costs no more to tokenize than a short one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from reward_service.scorers.base import (
    JSON,
    GradingLimits,
    Score,
    Scorer,
    ScorerSettings,
    ScoringInput,
    Status,
)

Message = dict[str, str]

CHARS_PER_TOKEN = 32
"""More characters than any real token spans: texts are cut to this many per
token the model reads before tokenizing."""


def _content_text(content: JSON) -> str:
    """A message's text: a string as-is, typed parts' `text` joined, anything else as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(part, dict) for part in content):
        return "\n".join(str(part["text"]) for part in content if "text" in part)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def prompt_messages(prompt: JSON) -> list[Message]:
    """The prompt as chat messages: a string is one user message; None is none."""
    if prompt is None:
        return []
    if isinstance(prompt, dict) and "content" in prompt:
        prompt = [prompt]
    if isinstance(prompt, list) and all(isinstance(m, dict) for m in prompt):
        return [
            {"role": str(m.get("role", "user")), "content": _content_text(m.get("content"))}
            for m in prompt
        ]
    return [{"role": "user", "content": _content_text(prompt)}]


def prompt_text(messages: Sequence[Message]) -> str:
    """Messages as one question, for models without a chat template: one message
    is its text, several are `role: text` paragraphs."""
    if len(messages) == 1:
        return messages[0]["content"]
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages)


class RewardModelSettings(ScorerSettings):
    """`REWARD_REWARD_MODEL__<FIELD>`: which model, and how it reads and runs."""

    name: str = Field(
        "OpenAssistant/reward-model-deberta-v3-large-v2",
        description="a local directory or a model already in the Hugging Face cache",
    )
    max_length: int = Field(512, ge=16, description="tokens per answer; the start is cut first")
    threads: int = Field(1, ge=1, description="torch threads per grading process")
    batch_size: int = Field(
        4, ge=1, le=4, description="answers per forward pass (the engine sends 4 at most)"
    )


@dataclass(frozen=True)
class _LoadedModel:
    """A tokenizer and model ready to grade, with the limits that apply to them."""

    name: str
    tokenizer: Any
    model: Any
    max_length: int
    batch_size: int

    @classmethod
    def load(cls, settings: RewardModelSettings) -> _LoadedModel:
        # Read by huggingface_hub and tokenizers at import and first use: no network
        # call ever (not even the hub's own look-ups), and no tokenizer thread pool
        # beside torch's capped one.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        import torch
        import transformers

        transformers.utils.logging.disable_progress_bar()  # stderr holds JSON log lines only
        torch.set_num_threads(settings.threads)
        name = settings.name
        # never a download: it would run under a grading deadline, in every worker
        tokenizer = transformers.AutoTokenizer.from_pretrained(name, local_files_only=True)
        tokenizer.truncation_side = "left"
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            name, local_files_only=True
        )
        model = model.to(torch.float32).eval()
        if model.config.num_labels != 1:
            raise ValueError(f"a reward model has 1 output, this one {model.config.num_labels}")
        return cls(
            name,
            tokenizer,
            model,
            max_length=min(settings.max_length, tokenizer.model_max_length),
            # without a pad token, answers cannot share a forward pass
            batch_size=settings.batch_size if tokenizer.pad_token is not None else 1,
        )

    @property
    def chat(self) -> bool:
        return self.tokenizer.chat_template is not None

    def texts(self, prompt: JSON, response: str) -> tuple[str, ...]:
        """What the model reads: one rendered conversation, or a (question, answer) pair."""
        keep = CHARS_PER_TOKEN * self.max_length
        messages = [{**m, "content": m["content"][-keep:]} for m in prompt_messages(prompt)]
        response = response[-keep:]
        if not self.chat:
            return (prompt_text(messages)[-keep:], response)
        conversation = [*messages, {"role": "assistant", "content": response}]
        rendered: str = self.tokenizer.apply_chat_template(conversation, tokenize=False)
        return (rendered,)

    def rewards(self, inputs: Sequence[tuple[str, ...]]) -> list[tuple[float, int]]:
        """One forward pass: each input's logit and how many tokens the model read."""
        import torch

        encoded = self.tokenizer(
            *map(list, zip(*inputs, strict=True)),
            add_special_tokens=not self.chat,  # a chat template writes its own
            truncation=True,
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )
        with torch.inference_mode():
            logits = self.model(**encoded).logits[:, 0]
        lengths = encoded["attention_mask"].sum(dim=1)
        return [(float(x), int(n)) for x, n in zip(logits.tolist(), lengths.tolist(), strict=True)]


class RewardModelScorer(Scorer):
    """The raw logit of a sequence-classification reward model, status `ok`."""

    name = "reward_model"

    batch_size: ClassVar[int] = 4
    """Answers the engine sends one worker task, under one deadline; the model's
    forward passes within it take `RewardModelSettings.batch_size` (at most this) each.
    Small: on CPU a batch costs about the sum of its answers (batching saves
    only per-call overhead, on short answers), and the whole chunk must fit in
    one deadline."""

    settings_model = RewardModelSettings

    def __init__(
        self, limits: GradingLimits | None = None, settings: ScorerSettings | None = None
    ) -> None:
        super().__init__(limits, settings)
        assert isinstance(self.settings, RewardModelSettings)
        self.model_settings: RewardModelSettings = self.settings
        self._model: _LoadedModel | None = None
        self._load_error: str | None = None

    def _loaded(self) -> _LoadedModel | str:
        """The model, loaded on first use; or why it cannot be (kept: retrying costs each call)."""
        if self._model is None and self._load_error is None:
            try:
                self._model = _LoadedModel.load(self.model_settings)
            except Exception as exc:  # a missing or broken model is an `error` status
                name = self.model_settings.name
                self._load_error = (
                    f"cannot load reward model {name!r} (a local directory or a model in the"
                    f" Hugging Face cache; nothing is downloaded): {_brief(exc)}"
                )
        return self._model or str(self._load_error)

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        [result] = self.score_many([(prompt, response, label, options)])
        return result

    def score_many(self, items: Sequence[ScoringInput]) -> list[Score]:
        model = self._loaded()
        if isinstance(model, str):
            return [Score.error(model)] * len(items)
        scores: dict[int, Score] = {}
        inputs: dict[int, tuple[str, ...]] = {}
        for index, (prompt, response, _label, _options) in enumerate(items):
            try:
                inputs[index] = model.texts(prompt, response)
            except Exception as exc:  # a chat template may reject a conversation
                scores[index] = Score.error(f"cannot render the prompt: {_brief(exc)}")
        by_length = sorted(inputs, key=lambda i: sum(map(len, inputs[i])))  # less padding
        for start in range(0, len(by_length), model.batch_size):
            batch = by_length[start : start + model.batch_size]
            try:
                results = model.rewards([inputs[i] for i in batch])
            except Exception as exc:  # e.g. a max length beyond the model's positions
                failure = Score.error(f"reward model failed: {_brief(exc)}", model=model.name)
                scores.update(dict.fromkeys(batch, failure))
                continue
            for index, (reward, tokens) in zip(batch, results, strict=True):
                scores[index] = Score(reward, Status.OK, {"model": model.name, "tokens": tokens})
        return [scores[index] for index in range(len(items))]


def _brief(exc: BaseException, limit: int = 300) -> str:
    """An exception as one bounded line for a `reason`."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 3] + "..."
