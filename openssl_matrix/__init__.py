"""openssl-matrix: build OpenSSL many ways in containers and measure it honestly."""

__version__ = "0.1.0"
