"""Talking to AWS: the event loop's DynamoDB client, its HTTP, retries, credentials, call log; boto3."""
