"""Who is calling the API: `Authorization: Bearer <credential>` → a Principal (the caller the
access policy judges, a scope, and the key the rate limit counts against).

Two kinds of credential resolve to the same Caller and policy as the app and the CLI:
- an API key (rag_core/api_keys.py): its user, groups, tenant; admin only with the admin scope;
- an OIDC token (a JWT: an ID token, or an access token in JWT form) when RAG_API_OIDC_ISSUER is
  set: signature checked against the issuer's JWKS (PyJWT's PyJWKClient fetches and caches the
  keys, refetching on an unknown key id, so a rotated key is picked up), plus issuer, audience and
  expiry. User = `email` (else `sub`), groups and tenant from the claims the app uses
  (RAG_AUTH_GROUPS_CLAIM, RAG_AUTH_TENANT_CLAIM), admins from RAG_ADMIN_EMAILS/RAG_ADMIN_GROUPS as
  in the app. A signed-in person may do what they may do in the app: scope "write" (admin: "admin").
"""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.request
from dataclasses import dataclass

from .. import access
from ..access import Caller
from ..api_keys import ApiKeys, scope_allows
from ..config import Settings
from ..errors import GroundworkError


class Unauthorized(GroundworkError):
    """No usable credential: 401 with WWW-Authenticate."""

    def __init__(self, message: str, invalid: bool = False):
        super().__init__(message)
        self.invalid = invalid  # a credential was given but is not good (RFC 6750 "invalid_token")


@dataclass(frozen=True)
class Principal:
    caller: Caller
    scope: str  # read | write | admin
    key: str  # what the rate limit counts against: "key:<id>", "oidc:<sub>", "local"
    via: str  # "api_key" | "oidc" | "no-auth"

    def allows(self, need: str) -> bool:
        return scope_allows(self.scope, need)


class Authenticator:
    def __init__(self, settings: Settings, keys: ApiKeys, no_auth: bool = False):
        self.settings = settings
        self.keys = keys
        self.no_auth = no_auth
        self._jwks = None
        self._jwks_lock = threading.Lock()

    def resolve(self, authorization: str | None) -> Principal:
        if self.no_auth:
            # `serve --no-auth`, loopback only (cli.py refuses other hosts): the person at the
            # machine, exactly like the CLI with no identity.
            return Principal(Caller.operator(), "admin", "local", "no-auth")
        scheme, _, cred = (authorization or "").strip().partition(" ")
        cred = cred.strip()
        if scheme.lower() != "bearer" or not cred:
            raise Unauthorized("this endpoint needs a credential: Authorization: Bearer <API key or OIDC token>")
        if cred.startswith("gwk_"):
            key = self.keys.authenticate(cred)
            if key is None:
                raise Unauthorized("the API key is not valid (unknown, mistyped or revoked)", invalid=True)
            return Principal(key.caller(), key.scope, f"key:{key.key_id}", "api_key")
        if cred.count(".") == 2 and self.settings.api_oidc_issuer:
            return self._oidc(cred)
        raise Unauthorized("the credential is neither an API key nor an accepted OIDC token", invalid=True)

    # ---- OIDC ----------------------------------------------------------------------------
    def _jwks_client(self):
        with self._jwks_lock:
            if self._jwks is None:
                import jwt

                url = self.settings.api_oidc_jwks_url
                if not url:
                    issuer = self.settings.api_oidc_issuer.rstrip("/")
                    with urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration", timeout=10) as r:
                        url = json.load(r)["jwks_uri"]
                self._jwks = jwt.PyJWKClient(url, cache_keys=True, lifespan=3600, timeout=10)
            return self._jwks

    def _oidc(self, token: str) -> Principal:
        import jwt

        s = self.settings
        if not s.api_oidc_audience:
            raise Unauthorized("OIDC tokens are not accepted: RAG_API_OIDC_AUDIENCE is not set on the server")
        try:
            client = self._jwks_client()
            if jwt.get_unverified_header(token).get("kid"):
                key = client.get_signing_key_from_jwt(token)
            else:  # no key id (some providers, with a single key): that key or nothing
                keys = client.get_signing_keys()
                if len(keys) != 1:
                    raise jwt.InvalidTokenError("the token names no key id and the issuer has several keys")
                key = keys[0]
            claims = jwt.decode(token, key.key, algorithms=["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"],
                                audience=s.api_oidc_audience, issuer=s.api_oidc_issuer,
                                options={"require": ["exp", "iss", "sub"]}, leeway=30)
        except jwt.PyJWKClientError as exc:
            raise Unauthorized(f"the token's signing key is not the issuer's ({exc})", invalid=True) from exc
        except jwt.InvalidTokenError as exc:
            raise Unauthorized(f"the token is not valid: {exc}", invalid=True) from exc
        except OSError as exc:  # the issuer's keys could not be fetched
            raise Unauthorized(f"cannot check the token now: the issuer's keys are unreachable ({exc})",
                               invalid=True) from exc
        user = claims.get("email") or claims["sub"]
        groups = claims.get(s.auth_groups_claim) or []
        tenant = claims.get(s.auth_tenant_claim) if s.auth_tenant_claim else None
        caller = access.with_admin(Caller.of(user, groups, tenant), s)
        return Principal(caller, "admin" if caller.admin else "write", f"oidc:{claims['sub']}", "oidc")


class RateLimiter:
    """A token bucket per key: `per_minute` requests a minute on average, bursts up to the same
    number. Kept in the worker's memory (a SQLite write per request would serialise every
    reader), so with N workers a key gets up to N× the limit; README says to divide, or to
    limit at the proxy."""

    def __init__(self, per_minute: int):
        self.rate = per_minute / 60.0
        self.capacity = float(per_minute)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """0 when the request may go; else the seconds until it may (Retry-After)."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))
