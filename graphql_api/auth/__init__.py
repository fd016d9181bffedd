"""Who is calling: bearer tokens, JWKS, API keys, the authentication backend,
sign-in by SSO, and the active-caller check.
"""
