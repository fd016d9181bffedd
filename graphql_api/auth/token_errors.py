"""Why a JWT was refused, in our words: PyJWT's exceptions say it in theirs.

A client reads the reason ("Signature has expired" is PyJWT's wording, and its wording may
change with a release), so every failure a token can meet is named here once, for both kinds
of token verified (tokens.py's access tokens, oidc.py's ID tokens). A failure of our own
making (jwks.py, tokens.py: an algorithm we do not accept, an unknown key) is a
``TokenRefused``, whose message is already ours and passes as it is.
"""

from __future__ import annotations

import jwt


class TokenRefused(jwt.InvalidTokenError):
    """A reason of ours for refusing a token, worded for the client."""


def reason_of(error: jwt.PyJWTError) -> str:
    """What is wrong with a token PyJWT (or we) refused, as a phrase: "it has expired"."""
    if isinstance(error, TokenRefused):
        return str(error)
    if isinstance(error, jwt.ExpiredSignatureError):
        return "it has expired"
    if isinstance(error, jwt.ImmatureSignatureError):
        return "it is not valid yet (nbf or iat is in the future)"
    if isinstance(error, jwt.MissingRequiredClaimError):
        return f"it has no {error.claim} claim"
    if isinstance(error, jwt.InvalidIssuerError):
        return "it was issued by another issuer (iss)"
    if isinstance(error, jwt.InvalidAudienceError):
        return "it is addressed to another audience (aud)"
    if isinstance(error, jwt.InvalidIssuedAtError):
        return "its iat claim is not a number"
    if isinstance(error, jwt.InvalidSignatureError):
        return "its signature does not verify"
    if isinstance(error, jwt.DecodeError):
        return "it is not a well-formed JWT"
    if isinstance(error, jwt.InvalidAlgorithmError):
        return "its algorithm is not accepted"
    return "it cannot be verified"
