"""The GraphQL schema: root types, object types, mutations and the field-level permissions;
``executable`` builds it.
"""
