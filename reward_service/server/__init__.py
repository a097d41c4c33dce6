"""The HTTP layer: the only part that knows status codes.

app           create_app: wires the engine, the middleware and the route tables
endpoints     what each route does, and `admitted` (authorise, admit, read the body)
nemo_gym      NeMo Gym's resources-server routes: /verify, /aggregate_metrics, /seed_session
admission     the bound on requests in progress and the body bytes they hold
bodies        a request body read within its cap, the byte budget and one deadline
json_body     request bodies read as JSON with exact numbers
error_status  the error tree mapped to status codes
openapi       the scoring endpoints described into the OpenAPI schema
metrics       Prometheus metrics, with labels from fixed sets only
middleware    request ids, token paths, request metrics, access logs, connection recycling
pacing        requests with a body let into the app a few per event-loop turn (a burst's)
serving       listening sockets, uvicorn, the collector's settings, the drain on SIGTERM
"""
