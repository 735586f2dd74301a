"""Per-key rate limits (429 with Retry-After) and OIDC bearer tokens: a real local OpenID
provider (oidc-provider-mock) signs ID tokens; the API checks them against its JWKS, issuer and
audience, and the person gets the same access as in the app."""

from __future__ import annotations

import base64
import json
import urllib.parse

import httpx

from tests.api.conftest import api_server, build_data, make_keys


def test_past_the_rate_limit_a_key_gets_429_with_retry_after_and_others_are_not_affected(tmp_path):
    data = build_data(tmp_path)
    keys = make_keys(data)
    with api_server(data, env={"RAG_API_RATE_LIMIT": "5"}) as base:
        alice = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys['alice']}"})
        codes = [alice.get("/v1/knowledge-bases").status_code for _ in range(8)]
        assert codes[:5] == [200] * 5 and codes[5:] == [429] * 3
        r = alice.get("/v1/knowledge-bases")
        assert r.json()["error"]["code"] == "rate_limited" and 1 <= int(r.headers["retry-after"]) <= 12
        bob = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys['bob']}"})
        assert bob.get("/v1/knowledge-bases").status_code == 200
        assert httpx.get(f"{base}/v1/health", timeout=120).status_code == 200  # never limited


def id_token(issuer: str, sub: str, client_id: str = "groundwork") -> str:
    """An ID token by the authorization-code flow, as a sign-in would get it."""
    redirect = "http://127.0.0.1/callback"
    q = urllib.parse.urlencode({"client_id": client_id, "redirect_uri": redirect, "response_type": "code",
                                "scope": "openid email groups", "state": "s", "nonce": "n"})
    r = httpx.post(f"{issuer}/oauth2/authorize?{q}", data={"sub": sub}, timeout=120)
    assert r.status_code == 302, r.text
    code = urllib.parse.parse_qs(urllib.parse.urlparse(r.headers["location"]).query)["code"][0]
    t = httpx.post(f"{issuer}/oauth2/token", data={"grant_type": "authorization_code", "code": code,
                                                   "redirect_uri": redirect, "client_id": client_id,
                                                   "client_secret": "secret"}, timeout=120)
    assert t.status_code == 200, t.text
    return t.json()["id_token"]


def test_oidc_tokens_resolve_to_the_same_caller_and_policy(oidc, tmp_path):
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    data = build_data(tmp_path)
    ws = Workspace(get_settings(data))
    ws.create_kb("research-notes", caller=Caller.of("carol"), acl_groups=["research"])
    ws.close()
    env = {"RAG_API_OIDC_ISSUER": oidc, "RAG_API_OIDC_AUDIENCE": "groundwork"}
    with api_server(data, env=env) as base:
        def names(token: str) -> set[str]:
            r = httpx.get(f"{base}/v1/knowledge-bases", headers={"Authorization": f"Bearer {token}"}, timeout=120)
            assert r.status_code == 200, r.text
            return {k["name"] for k in r.json()["data"]}

        alice, bob = id_token(oidc, "alice@example.com"), id_token(oidc, "bob@example.com")
        assert "research-notes" in names(alice)  # her group may read it
        assert "research-notes" not in names(bob)
        # A token for another audience, a tampered one, and one from no issuer at all: 401.
        other = id_token(oidc, "alice@example.com", client_id="some-other-app")
        head, body, sig = alice.split(".")
        claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        claims["email"] = "root@example.com"
        forged = ".".join([head, base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("="), sig])
        for bad in (other, forged, "a.b.c"):
            r = httpx.get(f"{base}/v1/knowledge-bases", headers={"Authorization": f"Bearer {bad}"}, timeout=120)
            assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"], r.text


def test_several_workers_serve_one_data_folder_and_a_revocation_reaches_all_of_them(tmp_path):
    from rag_core.access import Caller
    from rag_core.api_keys import ApiKeys
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    data = build_data(tmp_path)
    ws = Workspace(get_settings(data))
    new = ApiKeys(ws.db).create("alice", "read", by=Caller.operator())
    with api_server(data, args=("--workers", "2")) as base:
        h = {"Authorization": f"Bearer {new.key}"}
        for _ in range(6):  # new connections: spread over both workers
            r = httpx.post(f"{base}/v1/query", headers=h,
                           json={"question": "When does the office open?", "knowledge_bases": ["handbook"]}, timeout=120)
            assert r.status_code == 200 and "8 o'clock" in r.json()["answer"]
        ApiKeys(ws.db).revoke(new.info.key_id, by=Caller.operator())
        assert all(httpx.get(f"{base}/v1/knowledge-bases", headers=h, timeout=120).status_code == 401 for _ in range(6))
    ws.close()
