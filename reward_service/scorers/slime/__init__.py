"""SLIME's `--rm-type` reward functions, ported so they grade without crashing.

    math          `math`: the last `\\boxed{}` against the label (`math_dataset`)
    deepscaler    `deepscaler`: the final solution graded as by `math`
    dapo          `dapo`: the DAPO / Minerva `Answer: X` check
    f1            `f1`: the SQuAD / HotpotQA token F1
    gpqa          `gpqa`: multiple choice read leniently
    random_reward `random`: a fair coin for smoke tests
    math_dataset  the MATH-dataset normalisation `math` and `deepscaler` share

Each module's docstring says where it departs from SLIME. Bind `math` as `slime_math`
when importing the module itself (`tests/test_architecture.py`).
"""
