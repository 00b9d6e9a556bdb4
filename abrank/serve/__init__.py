"""``abrank serve``: a read-only local explorer of every readout under a reports root
(DESIGN.md "Explanations and the explorer").

The standard library's threading HTTP server plus DuckDB, nothing else: no page loads
anything from the network, every page is server-rendered HTML with GET forms.

- :mod:`abrank.serve.catalog`: which readouts exist under the root (the only names a URL
  may refer to) and which files each folder lists as its own;
- :mod:`abrank.serve.query_table`: the query table of one readout, filtered, sorted and
  paged by DuckDB over ``queries.parquet``, and one query's lists from ``rankings.parquet``;
- :mod:`abrank.serve.routes`: URL to handler, every name from the URL checked against the
  catalog;
- :mod:`abrank.serve.pages` (HTML) and :mod:`abrank.serve.api` (JSON);
- :mod:`abrank.serve.server`: binding (loopback unless told otherwise) and the handler.
"""

# here, beside nothing heavy: the command's parser reads them for every verb's help
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765
