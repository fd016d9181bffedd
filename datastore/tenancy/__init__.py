"""The table's key vocabulary and the scopes that bound what a Table may touch."""
