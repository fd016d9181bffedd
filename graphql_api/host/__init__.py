"""What a server keeps on its host, shared by its processes: files named after their owner,
and the worker pool's state. The ground floor of graphql_api: it imports nothing of it.
"""
