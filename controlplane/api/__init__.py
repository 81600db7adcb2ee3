"""Resource types: kinds, scopes, defaulting, validation, selectors, table columns, schemas."""
