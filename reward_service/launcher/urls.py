"""Scoring URLs: build the in-cluster one, and derive its sibling endpoints.

Pure string work, no I/O. SLIME posts to `--rm-url` exactly as given, so
every URL here is the one SLIME will use, or one derived from it.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from reward_service.launcher.config import ConfigError, LaunchConfig

CLUSTER_DOMAIN = "svc.cluster.local"


def score_url(base: str, scorer: str | None = None) -> str:
    """`<base>/score[/<scorer>]`, `base` being `http://<host>:<port>`."""
    path = "/score" if not scorer else f"/score/{quote(scorer, safe='')}"
    return f"{base.rstrip('/')}{path}"


def service_url(service: str, namespace: str, port: int, scorer: str | None = None) -> str:
    """`http://<service>.<namespace>.svc.cluster.local:<port>/score[/<scorer>]`."""
    return score_url(f"http://{service}.{namespace}.{CLUSTER_DOMAIN}:{port}", scorer)


def with_token(url: str, token: str) -> str:
    """The same URL in the token path form, `/t/<token>/score...`, which SLIME can send."""
    parts = urlsplit(url)
    if parts.path != "/score" and not parts.path.startswith("/score/"):
        raise ConfigError(
            "SLIME_REWARD_TOKEN is set but the scoring URL's path is not /score[/<scorer>]: "
            "put the token in the URL yourself (/t/<token>/score) and unset SLIME_REWARD_TOKEN"
        )
    return urlunsplit(parts._replace(path=f"/t/{token}{parts.path}"))


def with_detail(url: str) -> str:
    """The same URL asking for the detail object (`?detail=1`), if it does not already."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "detail"]
    query.append(("detail", "1"))
    return urlunsplit(parts._replace(query=urlencode(query)))


def resolve_url(config: LaunchConfig) -> str:
    """The URL SLIME should post to: the explicit one, else the Service's DNS name.

    With a token it is in the URL's path; with detail, in its query.
    """
    url = config.url or service_url(config.service, config.namespace, config.port, config.scorer)
    if config.token:
        url = with_token(url, config.token)
    return with_detail(url) if config.detail else url


def readyz_url(url: str) -> str:
    """The service's `/readyz`, on the scoring URL's host and port."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/readyz", "", ""))


def batch_url(url: str) -> str:
    """The batch endpoint beside a scoring URL: `/score[/<scorer>]/batch`, query kept."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/batch"))


def group_url(url: str) -> str:
    """The group endpoint beside a scoring URL: `/score[/<scorer>]/group`, query kept."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/group"))


def scorers_url(url: str) -> str:
    """The service's `/scorers` listing, on the scoring URL's host and port."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/scorers", "", ""))


def url_scorer(url: str) -> str | None:
    """The scorer a scoring URL names (`/score/<scorer>`); None for plain `/score` (the
    service's default) or a URL that is not `/score…`."""
    segments = urlsplit(url).path.rstrip("/").split("/")
    return unquote(segments[-1]) if len(segments) >= 2 and segments[-2] == "score" else None


def scorer_url(url: str, scorer: str) -> str | None:
    """The scoring URL for another scorer on the same service; None if `url` is not `/score…`.

    Only `detail` is kept from the query: the URL's other parameters are its
    own scorer's options, which the other scorer may refuse (400).
    """
    parts = urlsplit(url)
    segments = parts.path.rstrip("/").split("/")
    if segments[-1] == "score":
        base = segments
    elif len(segments) >= 2 and segments[-2] == "score":
        base = segments[:-1]
    else:
        return None
    path = "/".join([*base, quote(scorer, safe="")])
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k == "detail"])
    return urlunsplit(parts._replace(path=path, query=query))
