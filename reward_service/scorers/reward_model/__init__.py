"""The `reward_model` scorer (`scorer`): a sequence-classification model on CPU, registered
only where the `rm` extra (torch, transformers) is installed."""
