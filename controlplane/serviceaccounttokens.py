"""ServiceAccount tokens: signed statements "the bearer is ServiceAccount default/builder".

A **ServiceAccount** is an identity for programs (a pod's containers, a CI job) rather than people:
``system:serviceaccount:<namespace>:<name>``, in the groups ``system:serviceaccounts`` and
``system:serviceaccounts:<namespace>``. Its credential is a **token** that the API server *signs*
rather than stores: kube-apiserver keeps no list of the tokens it issued. Whoever holds the public half
of the cluster's ServiceAccount key (``sa.pub``, see ``controlplane.pki``) can check that a token is
genuine; only the API server, holding ``sa.key``, can make one. That is what ``kubectl create token``
asks for, through the ``TokenRequest`` API (``POST .../serviceaccounts/<name>/token``), and what the
kubelet asks for to put a token into every pod.

The token is a **JWT** (JSON Web Token, RFC 7519) in the compact **JWS** form (RFC 7515): three
base64url pieces joined by dots, ``header.payload.signature``.

- The *header* says how it is signed: ``{"alg":"ES256","kid":"<key id>"}``: ECDSA on P-256 over
  SHA-256 (``RS256``, RSA PKCS#1 v1.5, for an RSA ``sa.key``, kubeadm's default), and which key
  (upstream's key id: the base64url SHA-256 of the public key's DER form, ``keyIDFromPublicKey`` in
  kubernetes ``pkg/serviceaccount/jwt.go``).
- The *payload* holds the **claims**: ``iss`` who issued it (kubeadm's
  ``https://kubernetes.default.svc.cluster.local``), ``sub`` whom it names, ``aud`` for whom it is
  meant (its *audiences*), ``iat``/``nbf``/``exp`` when it was issued, from when and until when it is
  good (seconds since 1970), ``jti`` a unique id (audit logs show it as the credential id
  ``JTI=<jti>``), and Kubernetes' private claim ``kubernetes.io``: the namespace, the ServiceAccount's
  name *and uid*, and the object the token is **bound** to (a pod, a secret or a node) with its uid.
- The *signature* covers the first two pieces: change one character of the payload and it no longer
  verifies.

Decoding a token needs no key (paste one into a JWT debugger): tokens are signed, not encrypted.

Checking a token (``TokenVerifier.verify``, then ``check_bound_objects``), in upstream's order
(``jwtTokenAuthenticator.AuthenticateToken`` in ``jwt.go``, ``validator.Validate`` in ``claims.go``):

1. its ``iss`` is one this server trusts (otherwise it is somebody else's token: no opinion);
2. the signature verifies with one of the trusted public keys;
3. its audiences meet the audiences asked for (for a request to the API server: the server's own,
   ``--api-audiences``, which default to the issuer). A token made for ``vault`` is useless here;
4. it is within ``nbf``..``exp``, give or take a **leeway** of 60 s for clocks that differ
   (go-jose's ``jwt.DefaultLeeway``);
5. the ServiceAccount still exists *with the same uid*, and so does the bound pod (or secret, or
   node). Deleting the pod, or deleting and re-creating the ServiceAccount under the same name,
   invalidates its tokens at once, although nobody kept a list of them. This is why tokens carry uids.

Everything here is pure: time comes in as an argument (the cluster's clock, so a scaled classroom
clock expires tokens as fast as it expires leases), objects are handed in by the caller. The API
server's authentication stage and its ``TokenRequest`` handler are the thin adapters around it. The
JWS layer (base64url, signing, signature checks, refusing ``alg: none``) is PyJWT's.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from controlplane.identity import SERVICE_ACCOUNTS, UserInfo, service_account_user
from controlplane.uids import new_uid

#: kubeadm's ``--service-account-issuer``: the cluster's in-cluster DNS name for the API server.
DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
#: go-jose's ``jwt.DefaultLeeway``: how far clocks may disagree about ``nbf`` and ``exp``.
LEEWAY = 60
#: ``TokenRequestSpec.expirationSeconds`` when unset (``SetDefaults_TokenRequestSpec``).
DEFAULT_EXPIRATION_SECONDS = 60 * 60
#: ``MinTokenAgeSec`` (pkg/apis/authentication/validation): shorter tokens are refused with 422.
MIN_EXPIRATION_SECONDS = 10 * 60
#: The longest a token may be asked for (validation: "larger than 2^32 seconds").
MAX_EXPIRATION_SECONDS = 1 << 32
#: The private claim Kubernetes puts its facts in.
PRIVATE_CLAIM = "kubernetes.io"
#: Tokens longer than this are not even parsed (a JWT of ours is about 1 KiB).
MAX_TOKEN_LENGTH = 16 * 1024

#: The user's extra fields (k8s.io/apiserver ``pkg/authentication/serviceaccount/util.go``, ``user.go``).
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey
Object = Mapping[str, Any]


class InvalidToken(Exception):
    """A token of ours that must not be accepted; the message is upstream's reason (for TokenReview)."""


# -- keys --------------------------------------------------------------------------------------------


def key_id(public_key: PublicKey) -> str:
    """Upstream's ``kid``: base64url (unpadded) of the SHA-256 of the key's DER SubjectPublicKeyInfo.

    (``keyIDFromPublicKey`` in kubernetes ``pkg/serviceaccount/jwt.go``; OIDC discovery publishes the
    same id in its JWKS, so a relying party can pick the key.)
    """
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


_EC_ALGORITHMS = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}


def signing_algorithm(key: PrivateKey | PublicKey) -> str:
    """RS256 for RSA keys; ES256/384/512 by curve for ECDSA keys (``signerFromECDSAPrivateKey``)."""
    if isinstance(key, (rsa.RSAPrivateKey, rsa.RSAPublicKey)):
        return "RS256"
    algorithm = _EC_ALGORITHMS.get(key.curve.name)
    if algorithm is None:
        raise ValueError(f"unsupported elliptic curve {key.curve.name} for ServiceAccount tokens")
    return algorithm


# -- claims ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """A name and uid in the private claim: ``{"name": ..., "uid": ...}``."""

    name: str
    uid: str

    def to_json(self) -> dict[str, str]:
        document = {"name": self.name}
        if self.uid:
            document["uid"] = self.uid
        return document

    @classmethod
    def from_json(cls, document: Any, what: str) -> ObjectRef | None:
        if document is None:
            return None
        if not isinstance(document, dict):
            raise InvalidToken(f"the {what} claim must be an object")
        name, uid = document.get("name", ""), document.get("uid", "")
        if not isinstance(name, str) or not isinstance(uid, str):
            raise InvalidToken(f"the {what} claim's name and uid must be strings")
        return cls(name, uid)


@dataclass(frozen=True, slots=True)
class TokenClaims:
    """What a ServiceAccount token says (``jwt.Claims`` plus ``privateClaims`` in claims.go)."""

    issuer: str
    subject: str
    audiences: tuple[str, ...]
    issued_at: int
    not_before: int
    expires: int
    jti: str
    namespace: str
    service_account: ObjectRef
    pod: ObjectRef | None = None
    secret: ObjectRef | None = None
    node: ObjectRef | None = None

    def to_json(self) -> dict[str, Any]:
        """The payload, keys sorted as go-jose writes its claims map."""
        private: dict[str, Any] = {"namespace": self.namespace}
        for key, ref in (("node", self.node), ("pod", self.pod), ("secret", self.secret)):
            if ref is not None:
                private[key] = ref.to_json()
        private["serviceaccount"] = self.service_account.to_json()
        return {
            "aud": list(self.audiences),
            "exp": self.expires,
            "iat": self.issued_at,
            "iss": self.issuer,
            "jti": self.jti,
            PRIVATE_CLAIM: private,
            "nbf": self.not_before,
            "sub": self.subject,
        }

    @classmethod
    def from_json(cls, document: Any) -> TokenClaims:
        """Claims from a verified payload; ``InvalidToken`` if they have the wrong shape."""
        if not isinstance(document, dict):
            raise InvalidToken("the token's payload must be a JSON object")
        audiences = document.get("aud", [])
        if isinstance(audiences, str):  # RFC 7519 allows a single string
            audiences = [audiences]
        if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
            raise InvalidToken("the aud claim must be a string or a list of strings")
        times: dict[str, int] = {}
        for key in ("iat", "nbf", "exp"):
            value = document.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidToken(f"the {key} claim must be a number")
            times[key] = int(value)
        strings: dict[str, str] = {}
        for key in ("iss", "sub", "jti"):
            value = document.get(key, "")
            if not isinstance(value, str):
                raise InvalidToken(f"the {key} claim must be a string")
            strings[key] = value
        private = document.get(PRIVATE_CLAIM)
        if not isinstance(private, dict):
            raise InvalidToken(f"the token has no {PRIVATE_CLAIM} claim")
        namespace = private.get("namespace", "")
        service_account = ObjectRef.from_json(private.get("serviceaccount"), "serviceaccount")
        if (
            not isinstance(namespace, str)
            or not namespace
            or service_account is None
            or not service_account.name
        ):
            raise InvalidToken("the token names no namespace and ServiceAccount")
        return cls(
            issuer=strings["iss"],
            subject=strings["sub"],
            audiences=tuple(audiences),
            issued_at=times["iat"],
            not_before=times["nbf"],
            expires=times["exp"],
            jti=strings["jti"],
            namespace=namespace,
            service_account=service_account,
            pod=ObjectRef.from_json(private.get("pod"), "pod"),
            secret=ObjectRef.from_json(private.get("secret"), "secret"),
            node=ObjectRef.from_json(private.get("node"), "node"),
        )


def _ref(obj: Object | None) -> ObjectRef | None:
    if obj is None:
        return None
    meta = obj.get("metadata") or {}
    return ObjectRef(str(meta.get("name", "")), str(meta.get("uid", "")))


def new_claims(
    *,
    issuer: str,
    service_account: Object,
    audiences: Iterable[str],
    expiration_seconds: int,
    now: float,
    pod: Object | None = None,
    secret: Object | None = None,
    node: Object | None = None,
    jti: str | None = None,
) -> TokenClaims:
    """The claims of a new token for ``service_account`` (``Claims`` in kubernetes claims.go).

    A token is bound to at most one object: a pod (which may name the node it runs on, for the
    audit log: ``ServiceAccountTokenPodNodeInfo``), a secret, or a node.
    """
    if secret is not None and (pod is not None or node is not None):
        raise ValueError("internal error, token can only be bound to one object type")
    meta = service_account.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    issued = int(now)
    return TokenClaims(
        issuer=issuer,
        subject=service_account_user(namespace, name),
        audiences=tuple(audiences),
        issued_at=issued,
        not_before=issued,
        expires=issued + expiration_seconds,
        jti=jti or new_uid(),
        namespace=namespace,
        service_account=ObjectRef(name, str(meta.get("uid", ""))),
        pod=_ref(pod),
        secret=_ref(secret),
        node=_ref(node),
    )


# -- who the token stands for ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServiceAccountInfo:
    """The user a valid token stands for (``ServiceAccountInfo`` in k8s.io/apiserver)."""

    namespace: str
    name: str
    uid: str
    pod_name: str = ""
    pod_uid: str = ""
    node_name: str = ""
    node_uid: str = ""
    credential_id: str = ""

    def user_info(self) -> UserInfo:
        """Name, uid, the two ServiceAccount groups, and the bound objects as extra fields."""
        extra: dict[str, list[str]] = {}
        if self.pod_name and self.pod_uid:
            extra[POD_NAME_KEY] = [self.pod_name]
            extra[POD_UID_KEY] = [self.pod_uid]
        if self.credential_id:
            extra[CREDENTIAL_ID_KEY] = [self.credential_id]
        if self.node_name:
            extra[NODE_NAME_KEY] = [self.node_name]
            if self.node_uid:  # optional, only with the node's name
                extra[NODE_UID_KEY] = [self.node_uid]
        return UserInfo.create(
            service_account_user(self.namespace, self.name),
            uid=self.uid,
            groups=[SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{self.namespace}"],
            extra=extra,
        )


def credential_id(jti: str) -> str:
    """``JTI=<jti>``, what audit logs record to tell tokens apart (``CredentialIDForJTI``)."""
    return f"JTI={jti}" if jti else ""


def _deleted_before(obj: Object, cutoff: float) -> bool:
    """Whether ``obj`` was marked for deletion before ``cutoff`` (deleting within the leeway still counts)."""
    stamp = (obj.get("metadata") or {}).get("deletionTimestamp")
    if not isinstance(stamp, str) or not stamp:
        return False
    try:
        when = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return True
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp() < cutoff


def _uid(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))


def check_times(claims: TokenClaims, now: float) -> None:
    """``exp`` and ``nbf`` with the leeway (go-jose ``Claims.ValidateWithLeeway``)."""
    if claims.not_before and now + LEEWAY < claims.not_before:
        raise InvalidToken("service account token is not valid yet")
    if claims.expires and now - LEEWAY > claims.expires:
        raise InvalidToken("service account token has expired")


def check_bound_objects(
    claims: TokenClaims,
    *,
    now: float,
    service_account: Object | None,
    pod: Object | None = None,
    secret: Object | None = None,
    node: Object | None = None,
) -> ServiceAccountInfo:
    """The ServiceAccount and bound objects still exist, with the uids the token names.

    ``validator.Validate`` in kubernetes ``pkg/serviceaccount/claims.go``: the caller looked up the
    objects the claims name (None: not found); objects marked for deletion more than the leeway ago
    count as gone. Raises ``InvalidToken`` with upstream's reason.
    """
    check_times(claims, now)
    cutoff = now - LEEWAY
    namespace, sa_ref = claims.namespace, claims.service_account
    if service_account is None:
        raise InvalidToken(f'serviceaccounts "{sa_ref.name}" not found')
    if _deleted_before(service_account, cutoff):
        raise InvalidToken(f"service account {namespace}/{sa_ref.name} has been deleted")
    if _uid(service_account) != sa_ref.uid:
        raise InvalidToken(
            f"service account UID ({_uid(service_account)}) does not match claim ({sa_ref.uid})"
        )
    if claims.secret is not None:
        if secret is None or _deleted_before(secret, cutoff):
            raise InvalidToken("service account token has been invalidated")
        if _uid(secret) != claims.secret.uid:
            raise InvalidToken(
                f"secret UID ({_uid(secret)}) does not match service account secret ref claim "
                f"({claims.secret.uid})"
            )
    pod_name = pod_uid = ""
    if claims.pod is not None:
        if pod is None or _deleted_before(pod, cutoff):
            raise InvalidToken("service account token has been invalidated")
        if _uid(pod) != claims.pod.uid:
            raise InvalidToken(
                f"pod UID ({_uid(pod)}) does not match service account pod ref claim ({claims.pod.uid})"
            )
        pod_name, pod_uid = claims.pod.name, claims.pod.uid
    node_name = node_uid = ""
    if claims.node is not None:
        if claims.pod is None:  # a node-bound token: the node must still be there
            if node is None or _deleted_before(node, cutoff):
                raise InvalidToken("service account token has been invalidated")
            if _uid(node) != claims.node.uid:
                raise InvalidToken(
                    f"node UID ({_uid(node)}) does not match service account node ref claim "
                    f"({claims.node.uid})"
                )
        # A pod-bound token only reports the node its pod ran on: the pod's check is what counts.
        node_name, node_uid = claims.node.name, claims.node.uid
    return ServiceAccountInfo(
        namespace=namespace,
        name=sa_ref.name,
        uid=sa_ref.uid,
        pod_name=pod_name,
        pod_uid=pod_uid,
        node_name=node_name,
        node_uid=node_uid,
        credential_id=credential_id(claims.jti),
    )


# -- signing and verifying --------------------------------------------------------------------------


def unverified_issuer(token: str) -> str | None:
    """The ``iss`` of a JWT-shaped token, read *without* checking anything (``hasCorrectIssuer``).

    Only for routing: a token whose issuer is not ours is another authenticator's business.
    """
    if len(token) > MAX_TOKEN_LENGTH or token.count(".") != 2:
        return None
    payload = token.split(".")[1]
    try:
        document = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, binascii.Error, RecursionError):  # RecursionError: "[[[[...]]]]"
        return None
    issuer = document.get("iss") if isinstance(document, dict) else None
    return issuer if isinstance(issuer, str) else None


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    """A token whose issuer, signature and audiences are good, and the audiences it was accepted for."""

    claims: TokenClaims
    audiences: tuple[str, ...]


def intersect(ours: Sequence[str], theirs: Sequence[str]) -> tuple[str, ...]:
    """The audiences in both, in the order of ``ours`` (``authenticator.Audiences.Intersect``)."""
    wanted = set(theirs)
    return tuple(a for a in dict.fromkeys(ours) if a in wanted)


class TokenIssuer:
    """A cluster's ServiceAccount token issuer: kube-apiserver's ``--service-account-*`` flags.

    ``signing_key`` signs new tokens (``--service-account-signing-key-file``); tokens signed by it or by
    one of ``extra_public_keys`` (``--service-account-key-file``, e.g. a key being rotated out) verify.
    ``api_audiences`` (``--api-audiences``) are the audiences a token must have to be used against this
    API server, and the default audiences of a TokenRequest; they default to the issuer, as kubeadm's.
    ``max_expiration_seconds`` (``--service-account-max-token-expiration``, 0 = none) caps requests.
    """

    def __init__(
        self,
        signing_key: PrivateKey,
        *,
        issuer: str = DEFAULT_ISSUER,
        api_audiences: Iterable[str] = (),
        extra_public_keys: Iterable[PublicKey] = (),
        max_expiration_seconds: int = 0,
    ) -> None:
        if not issuer:
            raise ValueError("a ServiceAccount token issuer needs an issuer URL")
        self.issuer = issuer
        self.api_audiences = tuple(dict.fromkeys(api_audiences)) or (issuer,)
        self.max_expiration_seconds = max_expiration_seconds
        self._signing_key = signing_key
        self.algorithm = signing_algorithm(signing_key)
        self.key_id = key_id(signing_key.public_key())
        self._public_keys: dict[str, PublicKey] = {self.key_id: signing_key.public_key()}
        for public in extra_public_keys:
            self._public_keys.setdefault(key_id(public), public)
        self._jws = jwt.PyJWS()
        # What every token we sign starts with: the protected header, already encoded (PyJWS.encode
        # would build, check and encode the same one for each token), and the signing algorithm.
        self._signer = self._jws.get_algorithm_by_name(self.algorithm)
        header = {"alg": self.algorithm, "kid": self.key_id}
        self._encoded_header = _base64url(json.dumps(header, separators=(",", ":"), sort_keys=True).encode())

    def __repr__(self) -> str:
        return f"<TokenIssuer {self.issuer} kid={self.key_id} audiences={list(self.api_audiences)}>"

    def sign(self, claims: TokenClaims) -> str:
        """The compact JWS of ``claims``: ``{"alg":..,"kid":..}`` (no ``typ``, as go-jose's signer)."""
        payload = json.dumps(claims.to_json(), separators=(",", ":")).encode()
        signing_input = self._encoded_header + b"." + _base64url(payload)
        signature = self._signer.sign(signing_input, self._signing_key)
        return (signing_input + b"." + _base64url(signature)).decode()

    def has_correct_issuer(self, token: str) -> bool:
        """Whether ``token`` claims to be ours (before any check): if not, this issuer has no opinion."""
        return unverified_issuer(token) == self.issuer

    def verify(self, token: str, *, audiences: Sequence[str] | None = None) -> VerifiedToken:
        """Signature, issuer and audiences of one of our tokens (``AuthenticateToken`` in jwt.go).

        ``audiences`` are the ones the caller asks for (None: this API server's). Times and the
        objects the token names are checked afterwards (``check_bound_objects``), as upstream's
        validator does. Raises ``InvalidToken``.
        """
        if len(token) > MAX_TOKEN_LENGTH:
            raise InvalidToken("token is too long")
        try:
            header = self._jws.get_unverified_header(token)
        except jwt.InvalidTokenError as error:
            raise InvalidToken(str(error)) from None
        kid = header.get("kid")
        # The key named by kid when there is one; otherwise each trusted key in turn (jwt.go tries all).
        candidates = (
            [self._public_keys[kid]]
            if isinstance(kid, str) and kid in self._public_keys
            else self._public_keys.values()
        )
        problems: list[str] = []
        payload: bytes | None = None
        for public_key in candidates:
            try:
                decoded = self._jws.decode_complete(
                    token, public_key, algorithms=[signing_algorithm(public_key)]
                )
            except jwt.InvalidTokenError as error:
                problems.append(_jose_message(error))
                continue
            payload = decoded["payload"]
            break
        if payload is None:
            raise InvalidToken(problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]")
        try:
            document = json.loads(payload)
        except (ValueError, RecursionError):
            raise InvalidToken("the token's payload is not JSON") from None
        claims = TokenClaims.from_json(document)
        # The issuer was read before the signature was checked: check it again now that it is signed.
        if claims.issuer != self.issuer:
            raise InvalidToken(f'token issuer "{claims.issuer}" is invalid')
        requested = tuple(audiences) if audiences is not None else self.api_audiences
        token_audiences = claims.audiences or self.api_audiences  # a token without aud: legacy, ours only
        accepted = intersect(token_audiences, requested)
        if not accepted:
            raise InvalidToken(
                f"token audiences {_go_quoted(token_audiences)} is invalid for the target audiences "
                f"{_go_quoted(requested)}"
            )
        return VerifiedToken(claims, accepted)


def _base64url(data: bytes) -> bytes:
    """Base64url without padding (RFC 7515's encoding of each part of a compact JWS)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _jose_message(error: jwt.InvalidTokenError) -> str:
    if isinstance(error, jwt.InvalidSignatureError):
        return "go-jose/go-jose: error in cryptographic primitive"  # go-jose's ErrCryptoFailure
    return str(error)


def _go_quoted(values: Sequence[str]) -> str:
    """A list as Go's ``%q`` prints a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"
