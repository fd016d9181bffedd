"""The GraphQL schema: root types, object types, mutations, ids and the field-level
permissions; ``executable`` builds it.
"""
