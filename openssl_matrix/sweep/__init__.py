"""The release sweep: build every release the mirrors serve, and its table."""
