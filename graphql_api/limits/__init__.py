"""Abuse limits, one small class per module, all configured from ApiSettings.

Document limits (depth, aliases, tokens, cost) refuse a request before any resolver runs, so
a refused query makes no DynamoDB call; the body-size middleware refuses before GraphQL
parses anything; the tenant rate limit charges what MaxCost counted and refuses past the
organisation's bucket, before execution too; the call budget stops a request that reaches DynamoDB too often; the
response budget stops one whose pages add up to too many bytes. The extensions and the tenant
buckets come from ``configured``, and graphql_api/app.py installs them with the ASGI
middlewares (body_size, body_timeout, concurrency); the uvicorn protocols (protocols:
header_timeout and head_size) are graphql_api/entrypoints/serving.py's.
"""
