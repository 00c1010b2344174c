"""Reduction methods: how a block's text is made smaller (preview, summary)."""
