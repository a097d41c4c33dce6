"""Client-side code that runs inside other frameworks and calls the service.

http          `RewardClient` / `AsyncRewardClient`: pooled HTTP, retries, batching
verl          verl's `custom_reward_function` (`compute_score`)
slime_batch   SLIME's `--custom-rm-path` adapter (`batched_rm`): one request per group
trl           TRL's `GRPOTrainer` reward functions (`ServiceRewards`): one request per trainer call
"""
