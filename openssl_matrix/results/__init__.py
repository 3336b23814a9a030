"""The results tree on disk: versioned records, the tree and its journal, export."""
