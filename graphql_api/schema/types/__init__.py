"""The GraphQL object types, one module per entity."""
