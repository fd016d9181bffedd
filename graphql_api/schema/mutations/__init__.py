"""The write side of the API: one module per entity, one input and one payload per mutation."""
