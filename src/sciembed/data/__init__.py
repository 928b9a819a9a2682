"""Paper records and the collections they come in."""
