"""Context management modes."""
