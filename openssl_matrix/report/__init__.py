"""The report page written from a results tree: shared types, charts, tables, views, quality."""
