"""Values a caller hands in: ids, checked text, folded names, DynamoDB's wire format."""
