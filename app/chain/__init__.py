"""The chain: a link's life from its id to its hand-off, the Redis side of links, and runs outside the chain."""
