"""A self-contained demo: an agent offloads a large tool result and greps it back."""
