"""Tests that need a real Docker engine (all docker-marked): real builds, real openssl speed."""
