"""Context reduction strategies."""
