"""A shipped model's positional code, measured from its config alone (no weights): read with
transformers' own config class (``reading``), its frequencies three ways (``frequencies``,
against the float64 ``formula``), the precision paths (``precision``), the layout and
discontinuities (``layout``), one model measured with all of them (``model``).

The library's because two callers share it: the ``shipped`` section (``analyses/shipped/``,
every zoo model) and ``posenc model`` (any config.json, its page ``model.html.j2``).
"""
