"""One module per wizard step."""
