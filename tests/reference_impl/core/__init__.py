"""The shared core: frame buffer, errors, options, server and client plumbing, durability."""
