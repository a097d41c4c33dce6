"""The service on a Ray cluster, as a Ray Serve application that stays off GPU nodes.

    spec        `ServeSpec`: replicas, CPUs, autoscaling, port -> Serve's config (YAML)
    placement   which nodes may hold a replica; `PlacementError` when none may
    cluster     deploy, status, delete through the Ray dashboard's REST API
    deployment  the replica: the service's ASGI app, health check, sizing (runs on the cluster)
    ray_command the `reward-service ray ...` commands
    throughput  Serve against plain `reward-service serve`, same cores, one run

Only `deployment` imports Ray or the HTTP app; the rest speaks HTTP to the
dashboard, so the SLIME launcher uses it from a training job.

Errors (all `reward_service.errors.RewardServiceError`):

    RayServeError     the dashboard refused a request, or the app did not come up
     ├── PlacementError   no node may hold a replica (none CPU-only with reward_cpu)
     └── RewardLost       the bench's SLIME-like client spent all ten attempts
    ReplicaNotReady   a replica's grading pool is down: Serve's health check fails
"""
