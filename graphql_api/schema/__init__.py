"""The GraphQL schema: root types, object types, mutations, ids, cursors,
loaders and the field-level permissions; ``executable`` builds it.
"""
