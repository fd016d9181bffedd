"""Development-only parts: the embedded DynamoDB Local, a local STS, npm
fetches, the demo data and the seeder.
"""
