"""The HTTP layer: the only part that knows status codes.

app         routes; validates, dispatches to the engine, maps outcomes to HTTP
middleware  request ids, token paths, request metrics, access logs, connection recycling
json_body   request bodies read as JSON with exact numbers
openapi     the scoring endpoints described into the OpenAPI schema
metrics     Prometheus metrics, with labels from fixed sets only
serving     listening sockets, uvicorn, the drain on SIGTERM
"""
