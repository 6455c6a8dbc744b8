"""Row filters the aliasing analysis' measurements and evidence share."""


def _find(rows: list[dict], **where) -> list[dict]:
    return [r for r in rows if all(r[k] == v for k, v in where.items())]
