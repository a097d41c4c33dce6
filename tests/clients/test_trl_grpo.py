"""TRL's own `GRPOTrainer` trains for a few steps on CPU with its rewards from the live service,
through `reward_service.clients.trl`: a tiny Llama and a tiny tokenizer built here, nothing
downloaded. Skips without torch and trl (CI's step 2 installs both)."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from reward_service.clients.trl import MASKED_METRIC, ServiceRewards
from reward_service.testing import LiveServer

os.environ["HF_HUB_OFFLINE"] = "1"  # read when huggingface_hub is imported: no hub, ever

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
trl = pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")

pytestmark = [  # the trainer stack's own deprecations (trl 1.13 on transformers 5)
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

WORDS = ["\\boxed{1}", "\\boxed{2}", "<think>", "</think>", "<answer>", "</answer>", "1", "2", "+"]
"""The tiny vocabulary: a random policy writes right and wrong answers and stray tags."""
STEPS = 3
NAMES = ("accuracy", "format", "tag_count")
"""open_r1's components: one reward function each, logged by TRL under its name."""
NUM_GENERATIONS = 4


def _tokenizer() -> Any:
    """A word-level tokenizer of `WORDS`, with pad, eos and unk, built in memory."""
    specials = ["<pad>", "<eos>", "<unk>"]
    vocab = {word: i for i, word in enumerate(specials + WORDS)}
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    backend.decoder = tokenizers.decoders.WordPiece(prefix="##", cleanup=False)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        eos_token="<eos>",
        unk_token="<unk>",
        padding_side="left",
    )


def _model(tokenizer: Any) -> Any:
    """A one-layer Llama over the tokenizer's vocabulary, randomly initialised."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
    )
    return transformers.LlamaForCausalLM(config)


def _batch_requests(server: LiveServer) -> int:
    """Batch requests the service has answered, from its `/metrics`."""
    text = httpx.get(f"{server.url}/metrics").text
    pattern = r'^reward_http_requests_total\{[^}]*route="[^"]*batch"[^}]*\} (\S+)$'
    return int(sum(float(v) for v in re.findall(pattern, text, re.MULTILINE)))


@pytest.mark.slow
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_grpo_trains_on_the_live_service_rewards(
    server: LiveServer, tmp_path: Path, asynchronous: bool
) -> None:
    """GRPOTrainer runs its steps with open_r1's components as three weighted reward
    functions, plain or async (run on TRL's own event loop): one service request per
    trainer call for all three, the rewards logged under the components' names, a null
    label masked, and the policy's weights moved."""
    tokenizer = _tokenizer()
    model = _model(tokenizer)
    before = [p.detach().clone() for p in model.parameters()]
    dataset = datasets.Dataset.from_dict(
        {"prompt": ["1 + 1", "2 + 1", "1 + 2", "2 + 2"], "solution": ["2", None, "1", "2"]}
    )
    rewards = ServiceRewards(
        server.url, scorer="open_r1", label_column="solution", asynchronous=asynchronous
    )
    functions = rewards.components()
    assert [f.__name__ for f in functions] == list(NAMES)
    config = trl.GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=STEPS,
        per_device_train_batch_size=2 * NUM_GENERATIONS,  # two prompts a step: all four in two
        num_generations=NUM_GENERATIONS,
        max_completion_length=6,
        learning_rate=0.05,
        reward_weights=[1.0, 0.5, 0.25],
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=functions,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    requests_before = _batch_requests(server)
    trainer.train()
    if asynchronous:
        asyncio.run_coroutine_threadsafe(rewards.aclose(), trainer.async_loop).result()
    rewards.close()

    logged = [entry for entry in trainer.state.log_history if "rewards/accuracy/mean" in entry]
    assert len(logged) == STEPS
    assert all(f"rewards/{name}/mean" in entry for name in NAMES for entry in logged)
    assert _batch_requests(server) - requests_before == STEPS
    assert any(entry.get(MASKED_METRIC, 0.0) > 0.0 for entry in logged)  # the null label's row
    after = list(model.parameters())
    assert any(not torch.equal(b, a.detach()) for b, a in zip(before, after, strict=True))
