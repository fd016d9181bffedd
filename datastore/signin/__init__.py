"""Who someone is before and between requests: identities, identity providers, sessions, API keys."""
