"""The `reward_model` scorer, on a tiny reward model built and saved here (nothing downloaded)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from reward_service.errors import InvalidSetting
from reward_service.scorers.base import JSON, Status
from reward_service.scorers.reward_model.scorer import (
    RewardModelScorer,
    RewardModelSettings,
    prompt_messages,
    prompt_text,
)
from reward_service.settings import Settings
from reward_service.testing import live_server

os.environ["HF_HUB_OFFLINE"] = "1"  # read when huggingface_hub is imported: no hub, ever

MAX_LENGTH = 64
CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789.,:;?!'\"()[]{}+-*/=\\^_$")
CHAT_TEMPLATE = "{% for m in messages %}<{{ m.role }}> {{ m.content }}\n{% endfor %}"
QUESTION = "What is 6 times 7?"
ANSWERS = ["42", "The answer is 42.", "I think it is 41", "", "6 * 7 = 42, so: 42"]


def _save_model(path: Path, *, pad: bool = True, chat_template: str | None = None) -> Path:
    """A 2-layer BERT reward model (one logit) and a character WordPiece tokenizer."""
    tokenizers = pytest.importorskip("tokenizers")
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    vocab = {token: i for i, token in enumerate(specials + CHARS + [f"##{c}" for c in CHARS])}
    backend = tokenizers.Tokenizer(
        tokenizers.models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=10**6)
    )
    backend.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    backend.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_max_length=MAX_LENGTH,
        **({"pad_token": "[PAD]"} if pad else {}),
    )
    tokenizer.chat_template = chat_template
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=MAX_LENGTH,
        initializer_range=0.5,
        num_labels=1,
    )
    transformers.AutoModelForSequenceClassification.from_config(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save_model(tmp_path_factory.mktemp("tiny-rm"))


def _scorer(model: Path, **settings: Any) -> RewardModelScorer:
    return RewardModelScorer(settings=RewardModelSettings(name=str(model), **settings))


@pytest.fixture(scope="module")
def scorer(model_dir: Path) -> RewardModelScorer:
    return _scorer(model_dir)


@pytest.mark.parametrize(
    ("prompt", "messages"),
    [
        pytest.param("Hi?", [{"role": "user", "content": "Hi?"}], id="string"),
        pytest.param(None, [], id="null"),
        pytest.param(
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}],
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}],
            id="chat",
        ),
        pytest.param(
            [{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "image"}]}],
            [{"role": "user", "content": "Hi"}],
            id="typed-parts",
        ),
        pytest.param({"content": "Hi?"}, [{"role": "user", "content": "Hi?"}], id="one-message"),
        pytest.param(7, [{"role": "user", "content": "7"}], id="number"),
        pytest.param({"q": 1}, [{"role": "user", "content": '{"q": 1}'}], id="other-object"),
    ],
)
def test_prompt_messages(prompt: JSON, messages: list[dict[str, str]]) -> None:
    """Any JSON prompt becomes chat messages with string contents."""
    assert prompt_messages(prompt) == messages


def test_prompt_text_joins_several_messages_with_roles() -> None:
    """One message is its text; several are `role: text` paragraphs."""
    assert prompt_text([{"role": "user", "content": "Hi?"}]) == "Hi?"
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]
    assert prompt_text(chat) == "system: Be brief.\n\nuser: Hi?"


def test_module_and_scorer_need_no_torch() -> None:
    """Importing the module and building the scorer import neither torch nor transformers."""
    code = (
        "import sys; from reward_service.scorers.reward_model.scorer import RewardModelScorer; "
        "RewardModelScorer(); print(sorted({'torch', 'transformers'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "[]", result.stderr


def test_reward_is_a_deterministic_raw_logit(scorer: RewardModelScorer, model_dir: Path) -> None:
    """The reward is a float logit with status ok, the same every time, naming the model."""
    first = scorer.score(QUESTION, "The answer is 42.", "42", {})
    assert isinstance(first.reward, float)
    assert first.status is Status.OK
    assert first.details["model"] == str(model_dir)
    assert scorer.score(QUESTION, "The answer is 42.", "42", {}) == first


def test_reward_depends_on_the_response(scorer: RewardModelScorer) -> None:
    """Different answers to one question get different rewards."""
    rewards = {scorer.score(QUESTION, answer, None, {}).reward for answer in ANSWERS}
    assert len(rewards) == len(ANSWERS)


@pytest.mark.parametrize("forward_batch", [1, 2, 4])
def test_batch_gives_the_rewards_of_one_by_one(model_dir: Path, forward_batch: int) -> None:
    """`score_many` of five answers gives each the reward `score` gives it, at any forward batch."""
    scorer = _scorer(model_dir, batch_size=forward_batch)
    items = [(QUESTION, answer, "42", {}) for answer in ANSWERS]
    batched = scorer.score_many(items)
    single = [scorer.score(*item) for item in items]
    assert [s.reward for s in batched] == pytest.approx([s.reward for s in single], abs=1e-5)
    assert [s.details["tokens"] for s in batched] == [s.details["tokens"] for s in single]


def test_chat_prompt_reads_as_its_text(scorer: RewardModelScorer) -> None:
    """Without a chat template, a one-message chat prompt (parts or not) is graded as its text."""
    plain = scorer.score(QUESTION, "42", None, {}).reward
    chat = [{"role": "user", "content": QUESTION}]
    parts = [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}]
    assert scorer.score(chat, "42", None, {}).reward == pytest.approx(plain, abs=1e-6)
    assert scorer.score(parts, "42", None, {}).reward == pytest.approx(plain, abs=1e-6)


def test_chat_template_renders_the_conversation(tmp_path: Path) -> None:
    """With a chat template, the model reads the rendered conversation, response as assistant."""
    model_dir = _save_model(tmp_path, chat_template=CHAT_TEMPLATE)
    import torch
    import transformers

    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
    result = _scorer(model_dir).score(prompt, "42", None, {})
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    text = f"<system> Be brief.\n<user> {QUESTION}\n<assistant> 42\n"
    with torch.inference_mode():
        expected = model(**tokenizer(text, add_special_tokens=False, return_tensors="pt")).logits
    assert result.status is Status.OK
    assert result.reward == pytest.approx(float(expected[0, 0]), abs=1e-5)


def test_long_response_is_cut_from_its_start(scorer: RewardModelScorer) -> None:
    """A response past the max length is graded on its end: same ending, same reward."""
    ending = "blah " * MAX_LENGTH + "so the final answer is 42"
    one = scorer.score(QUESTION, "blah " * 200_000 + ending, None, {})
    other = scorer.score(QUESTION, "Let me think. " * 1_000 + ending, None, {})
    changed = scorer.score(QUESTION, "blah " * 200_000 + ending.replace("42", "41"), None, {})
    assert one.details["tokens"] == MAX_LENGTH
    assert one.reward == pytest.approx(other.reward, abs=1e-6)
    assert changed.reward != pytest.approx(one.reward, abs=1e-6)


def test_max_length_setting_caps_the_tokens(model_dir: Path) -> None:
    """`max_length` below the model's limit bounds what the model reads."""
    result = _scorer(model_dir, max_length=16).score(QUESTION, "4" * 100, None, {})
    assert (result.status, result.details["tokens"]) == (Status.OK, 16)


@pytest.mark.parametrize(
    ("prompt", "label"),
    [
        pytest.param(None, None, id="nulls"),
        pytest.param({"weird": [1, 2]}, {"scorer": "reward_model", "answer": 3}, id="objects"),
        pytest.param(3.5, [1, "a", None], id="number-and-list"),
        pytest.param([{"content": None}], True, id="message-without-role"),
        pytest.param([], "", id="empty"),
    ],
)
def test_odd_prompt_or_label_is_graded(
    scorer: RewardModelScorer, prompt: JSON, label: JSON
) -> None:
    """Prompts and labels of any JSON shape are graded, never raised on."""
    assert scorer.score(prompt, "42", label, {}).status is Status.OK


def test_non_string_response_is_an_error(scorer: RewardModelScorer) -> None:
    """A response that is not text is an error for itself only, not for its batch."""
    bad, good = scorer.score_many([(QUESTION, 42, None, {}), (QUESTION, "42", None, {})])  # type: ignore[list-item]
    assert (bad.status, good.status) == (Status.ERROR, Status.OK)


def test_missing_model_is_an_error(tmp_path: Path) -> None:
    """A model that cannot be loaded answers status error with the reason, call after call."""
    scorer = _scorer(tmp_path / "no-such-model")
    for _ in range(2):
        result = scorer.score(QUESTION, "42", None, {})
        assert result.status is Status.ERROR
        assert "cannot load reward model" in result.details["reason"]


def test_hub_name_is_never_downloaded(tmp_path: Path) -> None:
    """A hub model missing from the cache is an error at once, without opening a connection."""
    pytest.importorskip("transformers")
    code = (
        "import socket\n"
        "def refuse(*args): raise SystemExit('connection attempted')\n"
        "socket.getaddrinfo = socket.socket.connect = refuse\n"
        "from reward_service.scorers.reward_model.scorer import RewardModelScorer\n"
        "print(RewardModelScorer().score('q', 'a', None, {}).status.value)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env["HF_HOME"] = str(tmp_path)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.stdout.strip() == "error", result.stderr


def test_model_without_pad_token_grades_one_at_a_time(tmp_path: Path) -> None:
    """A tokenizer without a pad token still grades a batch, one answer per forward pass."""
    scorer = _scorer(_save_model(tmp_path, pad=False))
    batched = scorer.score_many([(QUESTION, answer, None, {}) for answer in ANSWERS])
    single = [scorer.score(QUESTION, answer, None, {}) for answer in ANSWERS]
    assert [s.reward for s in batched] == pytest.approx([s.reward for s in single], abs=1e-6)


def test_thread_count_is_applied(model_dir: Path) -> None:
    """A worker's first grading sets torch's thread count to `threads`."""
    import torch

    torch.set_num_threads(3)
    _scorer(model_dir, threads=1).score(QUESTION, "42", None, {})
    assert torch.get_num_threads() == 1


def test_forward_batch_setting_is_bounded_by_the_engine_chunk() -> None:
    """`REWARD_REWARD_MODEL__BATCH_SIZE` cannot exceed the answers the engine sends at once."""
    limit = RewardModelScorer.batch_size

    def read(batch_size: int) -> RewardModelSettings:
        settings = Settings(scorers={"reward_model": {"batch_size": batch_size}})
        return settings.scorer_settings("reward_model", RewardModelSettings)

    assert read(limit).batch_size == limit
    with pytest.raises(InvalidSetting, match="less than or equal"):
        read(limit + 1)


def test_live_server_grades_as_in_process(scorer: RewardModelScorer, model_dir: Path) -> None:
    """`/score/reward_model` and its batch endpoint answer the in-process rewards."""
    items = [{"prompt": QUESTION, "response": answer, "label": "42"} for answer in ANSWERS]
    expected = [scorer.score(i["prompt"], i["response"], i["label"], {}).reward for i in items]
    env = {
        "REWARD_REWARD_MODEL__NAME": str(model_dir),
        "HF_HUB_OFFLINE": "1",
        "REWARD_DEADLINE_S": "60",
    }
    with live_server(workers=1, env=env) as server:
        url = f"{server.url}/score/reward_model"
        one = [httpx.post(url, json=item, timeout=60).json() for item in items]
        batch = httpx.post(f"{url}/batch", json={"items": items}, timeout=60).json()["rewards"]
    assert one == pytest.approx(expected, abs=1e-5)
    assert batch == pytest.approx(expected, abs=1e-5)
