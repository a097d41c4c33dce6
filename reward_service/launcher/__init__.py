"""The SLIME launcher: URL, preflight, launch and Ray submission.

    urls        build the in-cluster scoring URL, derive /readyz and /batch
    preflight   refuse a launch against a service that is down or grades wrongly
    launch      exec the train command with SLIME's reward flags added
    submit      submit the job to Ray with its argv intact
    config      `LaunchConfig`, the `SLIME_REWARD_*` environment read once
    commands    the `reward-service slime ...` commands
    slime_launcher.sh   the bash launcher `reward-service slime script` prints

Errors (all `reward_service.errors.RewardServiceError`):

    ConfigError (also a ValueError)   a SLIME_REWARD_* variable is unusable
    PreflightError                    the service is down, not ready or wrong
    SubmitError                       Ray refused the job, or the job failed
"""
