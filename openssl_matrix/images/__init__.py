"""Source tarballs, Dockerfile rendering and image builds."""
