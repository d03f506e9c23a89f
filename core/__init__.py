"""Helpers shared by the apps; this package imports no app (import-linter checks it).

- errors: the ApplicationError base every domain error subclasses (one JSON error shape)
- urls: URL normalization, the identity of a link everywhere
- db_fields, json_rows, sql_rows, counters: row helpers of the hot write and read paths
- spreadsheet: CSV cells that a spreadsheet cannot read as formulas"""
